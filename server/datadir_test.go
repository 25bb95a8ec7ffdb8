package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/storage"
	"github.com/sandbank/sandbank/tenant"
)

// getJSON sends a GET with the key and decodes the body into out.
func getJSON(t *testing.T, c *http.Client, url, key string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(b, out), "%s", b)
	}
	return resp.StatusCode
}

// stopServer shuts l down now (its cleanup then finds it stopped).
func stopServer(t *testing.T, l *live) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, l.Shutdown(ctx))
}

// TestDataDirKeepsAcrossRestart: with a data directory, a stored script
// and the receipt of an answered run are there after a restart, and the
// receipt verifies against the script and the input.
func TestDataDirKeepsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry(t)
	c := &http.Client{Timeout: time.Minute}
	src := "input.n * 2"
	l := startServer(t, reg, &Options{Data: dataIn(t, dir, nil)})
	code, _, stored := post(t, c, l.url+"/v1/scripts", "", map[string]any{"source": src})
	require.Equal(t, 200, code)
	addr := stored["script"].(string)
	code, h, rec := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "script": addr, "input": map[string]any{"n": 21}})
	require.Equal(t, 200, code, "%v", rec)
	assert.EqualValues(t, 42, rec["value"])
	run := h.Get(RunHeader)
	require.NotEmpty(t, run)
	stopServer(t, l)

	l = startServer(t, reg, &Options{Data: dataIn(t, dir, nil)})
	var got StoredReceipt
	require.Equal(t, 200, getJSON(t, c, l.url+"/v1/runs/"+run+"/receipt", "", &got))
	assert.Equal(t, run, got.Run)
	assert.NoError(t, receipt.VerifyReceipt(got.Receipt, []byte(src), json.RawMessage(`{"n":21}`)))
	answered, err := json.Marshal(rec["receipt"])
	require.NoError(t, err)
	kept, err := json.Marshal(got.Receipt)
	require.NoError(t, err)
	assert.JSONEq(t, string(answered), string(kept), "the kept receipt is the answered one")

	code, _, rec = post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "script": addr, "input": map[string]any{"n": 1}})
	require.Equal(t, 200, code, "%v", rec)
	assert.EqualValues(t, 2, rec["value"])
	assert.Zero(t, testutil.ToFloat64(l.metrics.damaged))
}

// TestDataDirRefusesDamagedScripts: a stored script whose bytes no longer
// match its address is reported on start, moved into quarantine and
// refused (a run naming it finds no script); a Put's leftover temporary
// file is removed.
func TestDataDirRefusesDamagedScripts(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry(t)
	c := &http.Client{Timeout: time.Minute}
	l := startServer(t, reg, &Options{Data: dataIn(t, dir, nil)})
	code, _, stored := post(t, c, l.url+"/v1/scripts", "", map[string]any{"source": "1 + 1"})
	require.Equal(t, 200, code)
	damagedAddr := stored["script"].(string)
	code, _, stored = post(t, c, l.url+"/v1/scripts", "", map[string]any{"source": "2 + 2"})
	require.Equal(t, 200, code)
	goodAddr := stored["script"].(string)
	stopServer(t, l)

	hexOf := func(addr string) string { return strings.TrimPrefix(addr, "sha256:") }
	scripts := filepath.Join(dir, "tenants", "dev", "scripts")
	path := filepath.Join(scripts, hexOf(damagedAddr)[:2], hexOf(damagedAddr))
	require.NoError(t, os.WriteFile(path, []byte("1 + 3"), 0o600))
	leftover := filepath.Join(scripts, hexOf(goodAddr)[:2], ".put-123")
	require.NoError(t, os.WriteFile(leftover, []byte("2 +"), 0o600))

	l = startServer(t, reg, &Options{Data: dataIn(t, dir, nil)})
	assert.Equal(t, float64(1), testutil.ToFloat64(l.metrics.damaged))
	assert.NoFileExists(t, path)
	assert.FileExists(t, filepath.Join(dir, "tenants", "dev", "quarantine", hexOf(damagedAddr)))
	assert.NoFileExists(t, leftover)
	code, _, rec := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "script": damagedAddr})
	assert.Equal(t, 404, code, "%v", rec)
	code, _, rec = post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "script": goodAddr})
	require.Equal(t, 200, code, "%v", rec)
	assert.EqualValues(t, 4, rec["value"])

	// Damaged while serving: refused on read, and reported.
	goodPath := filepath.Join(scripts, hexOf(goodAddr)[:2], hexOf(goodAddr))
	require.NoError(t, os.WriteFile(goodPath, []byte("2 + 5"), 0o600))
	code, _, rec = post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "script": goodAddr})
	assert.Equal(t, 503, code, "%v", rec)
	assert.Equal(t, float64(2), testutil.ToFloat64(l.metrics.damaged))
}

// TestDataDirFullStoreRefuses: a store on disk at its bound refuses a new
// script (413) and keeps the ones it acknowledged.
func TestDataDirFullStoreRefuses(t *testing.T) {
	dir := t.TempDir()
	c := &http.Client{Timeout: time.Minute}
	l := startServer(t, testRegistry(t), &Options{Data: dataIn(t, dir, &storage.DataOptions{StoreEntries: 1})})
	code, _, stored := post(t, c, l.url+"/v1/scripts", "", map[string]any{"source": "1"})
	require.Equal(t, 200, code)
	code, _, _ = post(t, c, l.url+"/v1/scripts", "", map[string]any{"source": "1"})
	assert.Equal(t, 200, code, "storing the same script again is not a new entry")
	code, _, _ = post(t, c, l.url+"/v1/scripts", "", map[string]any{"source": "2"})
	assert.Equal(t, 413, code)
	code, _, rec := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "script": stored["script"]})
	require.Equal(t, 200, code, "%v", rec)
	assert.EqualValues(t, 1, rec["value"])
}

// TestReceiptsAreTenantScoped: a run's receipt is found by its own
// tenant only.
func TestReceiptsAreTenantScoped(t *testing.T) {
	for name, dir := range map[string]string{"memory": "", "disk": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			set, keys := twoTenants(t)
			c := &http.Client{Timeout: time.Minute}
			l := startServer(t, testRegistry(t), &Options{Tenants: set, Data: dataIn(t, dir, nil)})
			code, h, rec := post(t, c, l.url+"/v1/runs", keys[0], map[string]any{"engine": "goja", "source": "1"})
			require.Equal(t, 200, code, "%v", rec)
			run := h.Get(RunHeader)
			assert.Equal(t, 200, getJSON(t, c, l.url+"/v1/runs/"+run+"/receipt", keys[0], nil))
			assert.Equal(t, 404, getJSON(t, c, l.url+"/v1/runs/"+run+"/receipt", keys[1], nil))
		})
	}
}

// twoTenants returns a set of the tenants "a" and "b" and their keys.
func twoTenants(t *testing.T) (*tenant.Set, [2]string) {
	t.Helper()
	ka, da, err := tenant.NewKey()
	require.NoError(t, err)
	kb, db, err := tenant.NewKey()
	require.NoError(t, err)
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"a","keys":[%q]},{"name":"b","keys":[%q]}]}`, da, db))
	require.NoError(t, err)
	return set, [2]string{ka, kb}
}

// TestStoreOverItsBoundIs413: a script larger than the tenant's store
// bound is the caller's request (413, not retryable), in memory as on
// disk.
func TestStoreOverItsBoundIs413(t *testing.T) {
	for name, dir := range map[string]string{"memory": "", "disk": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			c := &http.Client{Timeout: time.Minute}
			l := startServer(t, testRegistry(t), &Options{Data: dataIn(t, dir, &storage.DataOptions{StoreBytes: 4})})
			code, _, p := post(t, c, l.url+"/v1/scripts", "", map[string]any{"source": "12345"})
			assert.Equal(t, 413, code, "%v", p)
			assert.Equal(t, false, p["retryable"])
		})
	}
}

// TestAccessLogNamesTheRun: a run's access record holds the id its
// answer named, so an operator finds the receipt of a logged request.
func TestAccessLogNamesTheRun(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&syncWriter{w: &buf}, nil))
	l := startServer(t, testRegistry(t), &Options{Logger: log})
	code, h, rec := post(t, &http.Client{Timeout: time.Minute}, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "1"})
	require.Equal(t, 200, code, "%v", rec)
	run := h.Get(RunHeader)
	require.NotEmpty(t, run)
	stopServer(t, l)
	assert.Contains(t, buf.String(), `"runId":"`+run+`"`)
}

// TestRunNotKeptIsNotAnswered: a run whose receipt cannot be kept is
// answered with a retryable 503, never 200: an answered run is on disk.
func TestRunNotKeptIsNotAnswered(t *testing.T) {
	c := &http.Client{Timeout: time.Minute}
	l := startServer(t, testRegistry(t), &Options{Data: dataIn(t, t.TempDir(), nil)})
	code, _, rec := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "1"})
	require.Equal(t, 200, code, "%v", rec)
	_, receipts, err := l.data.Tenant(l.dev.Name)
	require.NoError(t, err)
	require.NoError(t, receipts.Close()) // every append now fails
	code, h, p := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "1"})
	assert.Equal(t, 503, code, "%v", p)
	assert.Equal(t, true, p["retryable"])
	assert.Empty(t, h.Get(RunHeader))
}

// TestDataDirOneServer: a data directory another process serves is
// refused, naming that process; so is one a server of this process
// serves; the directory is free again once its server is closed.
func TestDataDirOneServer(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry(t)
	other := startChild(t, dir)
	_, err := storage.OpenData(&storage.DataOptions{Dir: dir})
	require.ErrorIs(t, err, storage.ErrDataDirInUse)
	assert.Contains(t, err.Error(), fmt.Sprintf("process %d holds %s", other.cmd.Process.Pid, dir))
	require.NoError(t, other.cmd.Process.Kill())
	_ = other.cmd.Wait() // the kernel drops a dead process's lock

	first, err := New(reg, &Options{Data: dataIn(t, dir, nil)})
	require.NoError(t, err)
	_, err = storage.OpenData(&storage.DataOptions{Dir: dir})
	require.ErrorIs(t, err, storage.ErrDataDirInUse)
	assert.Contains(t, err.Error(), fmt.Sprintf("process %d holds", os.Getpid()))
	require.NoError(t, first.Close())
	again, err := New(reg, &Options{Data: dataIn(t, dir, nil)})
	require.NoError(t, err)
	require.NoError(t, again.Close())
}

// TestDataDirDamagedReceiptThroughHTTP: one flipped byte in the middle of
// the active receipt segment costs the server, after a restart, that one
// receipt (404, reported): the receipts of the runs answered after it
// are still served.
func TestDataDirDamagedReceiptThroughHTTP(t *testing.T) {
	const n, bad = 20, 5
	dir := t.TempDir()
	reg := testRegistry(t)
	c := &http.Client{Timeout: time.Minute}
	l := startServer(t, reg, &Options{Data: dataIn(t, dir, nil)})
	var runs []string
	for i := range n {
		code, h, rec := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": fmt.Sprintf("%d", i)})
		require.Equal(t, 200, code, "%v", rec)
		runs = append(runs, h.Get(RunHeader))
	}
	stopServer(t, l)

	seg := filepath.Join(dir, "tenants", "dev", "receipts", "00000000000000000001.log")
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	off := 0
	for range bad {
		f, ok := frameAt(b, off)
		require.True(t, ok)
		off += f.size
	}
	f, ok := frameAt(b, off)
	require.True(t, ok)
	require.Equal(t, runs[bad], f.run, "the runs' records are in the order of their answers")
	b[off+f.size/2] ^= 0x01
	require.NoError(t, os.WriteFile(seg, b, 0o600))

	l = startServer(t, reg, &Options{Data: dataIn(t, dir, nil)})
	assert.Equal(t, 1.0, testutil.ToFloat64(l.metrics.damaged))
	for i, run := range runs {
		want := 200
		if i == bad {
			want = 404
		}
		assert.Equal(t, want, getJSON(t, c, l.url+"/v1/runs/"+run+"/receipt", "", nil), "run %d", i)
	}
}

// frame is a record of a receipt log segment, as docs/data-dir.md
// describes it: a big-endian uint32 length and CRC-32C of the payload,
// then the payload, the JSON of {"run": ..., "receipt": ...}.
type frame struct {
	size int // the whole frame's
	run  string
}

// frameAt reads the frame at off in b; false when none that checks is
// there.
func frameAt(b []byte, off int) (frame, bool) {
	if len(b)-off < 8 {
		return frame{}, false
	}
	n := int(binary.BigEndian.Uint32(b[off:]))
	if n == 0 || len(b)-off-8 < n {
		return frame{}, false
	}
	payload := b[off+8 : off+8+n]
	if crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)) != binary.BigEndian.Uint32(b[off+4:]) {
		return frame{}, false
	}
	var rec struct {
		Run string `json:"run"`
	}
	if json.Unmarshal(payload, &rec) != nil {
		return frame{}, false
	}
	return frame{size: 8 + n, run: rec.Run}, true
}
