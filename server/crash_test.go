package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"

	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// crashChildEnv names the data directory of a child process of
// TestCrashKeepsWhatWasAnswered: the test binary, run again, serves on it
// (crashChild) instead of running the tests.
const crashChildEnv = "SANDBANK_SERVER_CRASH_CHILD_DIR"

// crashChild serves the API with goja on a loopback port of its own and
// the data directory dir, says "listening ADDR" on standard output, and
// serves until it is killed.
func crashChild(dir string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 2
	}
	f := func() (spi.Backend, error) { return goja.New(nil) }
	b, err := f()
	if err != nil {
		return fail(err)
	}
	caps := b.Capabilities()
	reg := registry.New()
	reg.Register(registry.Entry{Engine: "goja", Language: caps.Language, Capabilities: caps, Factory: f})
	// Generous queue bounds: under a loaded machine a run waits rather
	// than being refused, so every answer of the burst is a 200.
	data, err := storage.OpenData(&storage.DataOptions{Dir: dir})
	if err != nil {
		return fail(err)
	}
	s, err := New(reg, &Options{Data: data, MaxQueue: 4096, QueueTimeout: 10 * time.Minute})
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	return fail(s.Serve(ln))
}

// child is a server in a child process.
type child struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
}

// startChild starts a server on dir in a child process and waits for it
// to listen.
func startChild(t *testing.T, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &syncWriter{w: &stderr}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, stderr: &stderr}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the child did not start: %s", c.stderr)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	require.True(t, ok, "the child said %q", line)
	c.url = "http://" + addr
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return c
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

// answeredRun is a run the server answered with 200: what was sent, and
// the receipt and run id of the answer.
type answeredRun struct {
	run     string
	script  []byte
	input   json.RawMessage
	receipt json.RawMessage
}

// TestCrashKeepsWhatWasAnswered kills (SIGKILL) a server in a child
// process in the middle of a burst of concurrent runs and uploads, then
// starts it again on the same data directory: every run answered 200 has
// its receipt, equal to the answered one, and it verifies against its
// script and input; every acknowledged script is stored intact; the
// receipt logs hold only whole records, and no temporary file of a cut
// upload is left. The kill waits for a count of answers, never for a
// time.
func TestCrashKeepsWhatWasAnswered(t *testing.T) {
	dir := t.TempDir()
	srv := startChild(t, dir)
	c := &http.Client{Timeout: 10 * time.Minute}

	const workers, killAfter = 8, 64
	var (
		mu      sync.Mutex
		runs    []answeredRun
		scripts = map[record.Address][]byte{}
		answers atomic.Int64
		enough  = make(chan struct{})
		once    sync.Once
		wg      sync.WaitGroup
	)
	answered := func() {
		if answers.Add(1) == killAfter {
			once.Do(func() { close(enough) })
		}
	}
	// send posts body and decodes a 200's body into out; false when the
	// server is gone (the request was not answered).
	send := func(path string, body any, out any) (http.Header, bool) {
		b, err := json.Marshal(body)
		if err != nil {
			t.Error(err)
			return nil, false
		}
		resp, err := c.Post(srv.url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			return nil, false
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, false
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s answered %d: %s", path, resp.StatusCode, raw)
			return nil, false
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Errorf("%s: %v: %s", path, err, raw)
			return nil, false
		}
		return resp.Header, true
	}
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				n := w*1_000_000 + i
				input := json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))
				text := fmt.Sprintf("input.n + %d", n)
				src := []byte(text)
				switch i % 3 {
				case 0: // an upload
					var st ScriptStored
					if _, ok := send("/v1/scripts", ScriptRequest{Source: &text}, &st); !ok {
						return
					}
					mu.Lock()
					scripts[st.Script] = src
					mu.Unlock()
				case 1: // a run of the script just uploaded, by address
					var rec struct {
						Receipt json.RawMessage `json:"receipt"`
					}
					prev := []byte(fmt.Sprintf("input.n + %d", n-1))
					h, ok := send("/v1/runs", RunRequest{Engine: "goja", Script: string(record.AddressOf(prev)), Input: input}, &rec)
					if !ok {
						return
					}
					mu.Lock()
					runs = append(runs, answeredRun{run: h.Get(RunHeader), script: prev, input: input, receipt: rec.Receipt})
					mu.Unlock()
				default: // an inline run
					var rec struct {
						Receipt json.RawMessage `json:"receipt"`
					}
					h, ok := send("/v1/runs", RunRequest{Engine: "goja", Source: &text, Input: input}, &rec)
					if !ok {
						return
					}
					mu.Lock()
					runs = append(runs, answeredRun{run: h.Get(RunHeader), script: src, input: input, receipt: rec.Receipt})
					mu.Unlock()
				}
				answered()
			}
		})
	}
	<-enough
	require.NoError(t, srv.cmd.Process.Kill())
	wg.Wait()
	err := srv.cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the child was killed, not ended: %v; %s", err, srv.stderr)
	require.GreaterOrEqual(t, len(runs), killAfter/2)
	t.Logf("answered before the kill: %d runs, %d scripts", len(runs), len(scripts))

	srv = startChild(t, dir)
	for _, r := range runs {
		require.Len(t, r.run, 32, "a run's answer names its id")
		var got StoredReceipt
		status := getJSON(t, c, srv.url+"/v1/runs/"+r.run+"/receipt", "", &got)
		if !assert.Equal(t, http.StatusOK, status, "the receipt of run %s is lost", r.run) {
			continue
		}
		kept, err := json.Marshal(got.Receipt)
		require.NoError(t, err)
		assert.JSONEq(t, string(r.receipt), string(kept), "run %s: the kept receipt is the answered one", r.run)
		assert.NoError(t, receipt.VerifyReceipt(got.Receipt, r.script, r.input), "run %s", r.run)
	}
	store, err := storage.NewDirStore(filepath.Join(dir, "tenants", "dev", "scripts"), nil)
	require.NoError(t, err)
	for addr, src := range scripts {
		b, err := store.ReadScript(t.Context(), addr)
		if assert.NoError(t, err, "script %s is lost", addr) {
			assert.Equal(t, src, b)
		}
	}
	// One acknowledged script runs by address on the restarted server.
	for addr := range scripts {
		code, _, out := post(t, c, srv.url+"/v1/runs", "", RunRequest{Engine: "goja", Script: string(addr), Input: json.RawMessage(`{"n":0}`)})
		require.Equal(t, http.StatusOK, code, "%v", out)
		break
	}

	// Nothing half-written is left to serve: the logs are whole frames,
	// and no cut upload's temporary file is left.
	segs, err := filepath.Glob(filepath.Join(dir, "tenants", "dev", "receipts", "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		require.NoError(t, err)
		for off := 0; off < len(b); {
			f, ok := frameAt(b, off)
			require.True(t, ok, "%s: a record at %d does not check", seg, off)
			off += f.size
		}
	}
	leftovers, err := filepath.Glob(filepath.Join(dir, "tenants", "dev", "scripts", "*", ".*"))
	require.NoError(t, err)
	assert.Empty(t, leftovers)
}
