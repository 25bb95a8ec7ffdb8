package server

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/spi"
)

// twice asks for approval twice; its value shows the clock too, which a
// replay gives back the same.
const twice = `const a = await host.approve({rows: input.n});
const b = await host.approve("again");
({a, b, t: Date.now()})`

// suspendRun starts the approval script with approve suspending.
func suspendRun(t *testing.T, c *http.Client, l *live, key string) (int, http.Header, map[string]any) {
	t.Helper()
	return post(t, c, l.url+"/v1/runs", key, map[string]any{"engine": "quickjs", "source": twice, "input": map[string]any{"n": 2}, "suspend": []string{"approve"}})
}

func resumeRun(t *testing.T, c *http.Client, l *live, key, run string, answer any) (int, http.Header, map[string]any) {
	t.Helper()
	return post(t, c, l.url+"/v1/runs/"+run+"/resume", key, map[string]any{"answer": answer})
}

// requireWaiting checks a suspended run's answer and returns its run id.
func requireWaiting(t *testing.T, code int, h http.Header, body map[string]any, args string) string {
	t.Helper()
	require.Equal(t, 200, code, "%v", body)
	assert.Equal(t, "suspended", body["failure"].(map[string]any)["code"])
	assert.Equal(t, "suspended", body["receipt"].(map[string]any)["outcome"])
	w, ok := body["waiting"].(map[string]any)
	require.True(t, ok, "no waiting in %v", body)
	assert.Equal(t, "approve", w["name"])
	got, err := json.Marshal(w["args"])
	require.NoError(t, err)
	assert.JSONEq(t, args, string(got))
	assert.Equal(t, h.Get(RunHeader), w["run"])
	return h.Get(RunHeader)
}

// TestDurableRunOverHTTP: a run naming a host function in suspend ends
// suspended, with what it waits for and its run id; resume continues it
// (again suspended, then finished) under new run ids whose receipts
// chain (previous) and verify with the server's keys; the value is the
// one a live run gives. A run is resumed once (404 after), only by its
// tenant (404 for another, as for an unknown run), on an engine that
// declares deterministic (400 otherwise); in memory and on disk.
func TestDurableRunOverHTTP(t *testing.T) {
	for name, dir := range map[string]string{"memory": "", "disk": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			set, keys := twoTenants(t)
			c := &http.Client{Timeout: 5 * time.Minute}
			l := startServer(t, testRegistry(t), &Options{Tenants: set, Data: dataIn(t, dir, nil), Limits: slow})

			code, h, body := suspendRun(t, c, l, keys[0])
			first := requireWaiting(t, code, h, body, `{"rows":2}`)
			var stored StoredReceipt
			require.Equal(t, 200, getJSON(t, c, l.url+"/v1/runs/"+first+"/receipt", keys[0], &stored))
			assert.Equal(t, "suspended", stored.Receipt.Outcome)

			code, _, body = resumeRun(t, c, l, keys[1], first, true)
			assert.Equal(t, 404, code, "another tenant's run is unknown: %v", body)
			assert.Equal(t, KindInvalidCall, body["kind"])

			code, h, body = resumeRun(t, c, l, keys[0], first, true)
			second := requireWaiting(t, code, h, body, `"again"`)
			assert.NotEqual(t, first, second)
			code, _, body = resumeRun(t, c, l, keys[0], first, true)
			assert.Equal(t, 404, code, "a run is resumed once: %v", body)

			code, h, body = resumeRun(t, c, l, keys[0], second, false)
			require.Equal(t, 200, code, "%v", body)
			assert.Nil(t, body["waiting"])
			value, err := json.Marshal(body["value"])
			require.NoError(t, err)
			assert.JSONEq(t, `{"a":true,"b":false,"t":`+jsonNumber(t, body["value"].(map[string]any)["t"])+`}`, string(value))
			third := h.Get(RunHeader)
			require.Equal(t, 200, getJSON(t, c, l.url+"/v1/runs/"+third+"/receipt", keys[0], &stored))
			assert.NotEmpty(t, stored.Receipt.Previous)
			assert.Equal(t, 2, stored.Receipt.Suspensions)
			ks, err := receipt.NewKeySet(l.Keys().Keys...)
			require.NoError(t, err)
			require.NoError(t, receipt.VerifySignature(stored.Receipt, receipt.WithKeys(ks), receipt.RequireSignature()))

			live, _, livebody := post(t, c, l.url+"/v1/runs", keys[0], map[string]any{"engine": "quickjs", "source": `({t: Date.now()})`})
			require.Equal(t, 200, live, "%v", livebody)

			code, _, body = resumeRun(t, c, l, keys[0], "0123456789abcdef0123456789abcdef", true)
			assert.Equal(t, 404, code, "%v", body)
			code, _, body = post(t, c, l.url+"/v1/runs", keys[0], map[string]any{"engine": "goja", "source": twice, "suspend": []string{"approve"}})
			assert.Equal(t, 400, code, "goja does not declare deterministic: %v", body)
			code, _, body = post(t, c, l.url+"/v1/runs", keys[0], map[string]any{"engine": "quickjs", "source": twice, "suspend": []string{"not a name"}})
			assert.Equal(t, 400, code, "%v", body)
		})
	}
}

func jsonNumber(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// slow is the durable tests' ceiling: QuickJS's first run under -race on
// a loaded machine takes many seconds, and these tests are not about the
// wall clock.
var slow = spi.Limits{WallClock: 5 * time.Minute}

// TestDurableResumeInFlightIs409: while one resumption holds a run,
// another is refused 409 (not retryable); given back, it resumes. Every
// answer agrees with the OpenAPI document.
func TestDurableResumeInFlightIs409(t *testing.T) {
	c := &http.Client{Timeout: 5 * time.Minute}
	l := startServer(t, testRegistry(t), &Options{Limits: slow})
	d := fetchDocument(t, l.url)
	send := func(path, body string) (*http.Response, []byte) {
		t.Helper()
		resp, err := c.Post(l.url+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	resp, b := send("/v1/runs", `{"engine":"quickjs","source":`+jsonNumber(t, twice)+`,"input":{"n":2},"suspend":["approve"]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", b)
	d.check(t, "POST", "/v1/runs", resp, b)
	run := resp.Header.Get(RunHeader)
	store, err := l.data.Continuations("dev")
	require.NoError(t, err)
	_, done, err := store.Claim(run)
	require.NoError(t, err)
	resp, b = send("/v1/runs/"+run+"/resume", `{"answer":true}`)
	assert.Equal(t, 409, resp.StatusCode, "%s", b)
	d.check(t, "POST", "/v1/runs/{run}/resume", resp, b)
	assertRetryable(t, resp.StatusCode, b)
	require.NoError(t, done(false))
	resp, b = send("/v1/runs/"+run+"/resume", `{"answer":true}`)
	require.Equal(t, 200, resp.StatusCode, "%s", b)
	d.check(t, "POST", "/v1/runs/{run}/resume", resp, b)
	var body map[string]any
	require.NoError(t, json.Unmarshal(b, &body))
	requireWaiting(t, resp.StatusCode, resp.Header, body, `"again"`)
}

// TestDurableTamperedRefusedOverHTTP: a continuation edited where the
// server keeps it (an earlier answer, the pending call, its signature
// removed) is refused, 400 invalidCall, and nothing runs; the untouched
// one resumes.
func TestDurableTamperedRefusedOverHTTP(t *testing.T) {
	edits := map[string]func(cont map[string]any){
		"answer changed": func(cont map[string]any) {
			cont["hostCalls"].([]any)[0].(map[string]any)["answer"] = false
		},
		"pending changed": func(cont map[string]any) {
			cont["hostCalls"].([]any)[1].(map[string]any)["args"] = "never asked"
		},
		"signature stripped": func(cont map[string]any) {
			delete(cont["receipt"].(map[string]any), "signature")
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c := &http.Client{Timeout: 5 * time.Minute}
			l := startServer(t, testRegistry(t), &Options{Data: dataIn(t, dir, nil), Limits: slow})
			code, h, body := suspendRun(t, c, l, "")
			first := requireWaiting(t, code, h, body, `{"rows":2}`)
			code, h, body = resumeRun(t, c, l, "", first, true)
			run := requireWaiting(t, code, h, body, `"again"`)

			path := filepath.Join(dir, "tenants", "dev", "continuations", run+".json")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			var kept map[string]any
			require.NoError(t, json.Unmarshal(b, &kept))
			cont := kept["continuation"].(map[string]any)
			require.Len(t, cont["hostCalls"], 2)
			edit(cont)
			b, err = json.Marshal(kept)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b, 0o600))

			code, _, body = resumeRun(t, c, l, "", run, true)
			assert.Equal(t, 400, code, "%v", body)
			assert.Equal(t, KindInvalidCall, body["kind"])
			assert.Contains(t, body["detail"], "durable: ")
		})
	}
}
