package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/tenant"
)

// syncBuffer is a bytes.Buffer safe for the handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLogNeverHoldsTheScriptOrInput: one record per request with the
// tenant, engine, outcome and durations, and neither the script's text nor
// its input, nor the failure's message.
func TestAccessLogNeverHoldsTheScriptOrInput(t *testing.T) {
	var logs syncBuffer
	l := startServer(t, testRegistry(t), &Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	c := &http.Client{Timeout: time.Minute}
	code, _, body := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "'SECRET_SOURCE'; throw new Error('SECRET_MESSAGE ' + input.s)", "input": map[string]string{"s": "SECRET_INPUT"}})
	require.Equal(t, 200, code, "%v", body)
	code, _, _ = post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "SECRET_SOURCE2", "bogus": "SECRET_FIELD"})
	require.Equal(t, 422, code)
	text := logs.String()
	for _, secret := range []string{"SECRET_SOURCE", "SECRET_MESSAGE", "SECRET_INPUT", "SECRET_FIELD"} {
		assert.NotContains(t, text, secret)
	}
	assert.Contains(t, text, `"tenant":"dev"`)
	assert.Contains(t, text, `"engine":"goja"`)
	assert.Contains(t, text, `"outcome":"scriptError"`)
	assert.Contains(t, text, `"status":422`)
	assert.Equal(t, 2, strings.Count(text, `"msg":"sandbank: request"`))
}

// TestTraceContextPropagates: the effect's span is a child of the trace
// context in the request's traceparent header.
func TestTraceContextPropagates(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	l := startServer(t, testRegistry(t), &Options{TracerProvider: tp})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, err := http.NewRequest(http.MethodPost, l.url+"/v1/runs", strings.NewReader(`{"engine":"goja","source":"1"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	spans := rec.Ended()
	require.NotEmpty(t, spans)
	var found bool
	for _, s := range spans {
		if s.Name() == "sandbank.run" {
			found = true
			assert.Equal(t, traceID, s.SpanContext().TraceID().String())
			assert.Equal(t, parentID, s.Parent().SpanID().String())
			assert.True(t, s.Parent().IsRemote())
		}
	}
	assert.True(t, found, "the run's span was recorded")
}

// TestMetrics: runs by engine and outcome, the duration histogram, queue
// depth and rejections are on /metrics.
func TestMetrics(t *testing.T) {
	l := startServer(t, testRegistry(t), nil)
	c := &http.Client{Timeout: time.Minute}
	goodRun(t, c, l.url)
	post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "starlark", "source": "def main(input):\n    fail('x')\n"})
	l.draining.Store(true)
	post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "1"})
	l.draining.Store(false)
	resp, err := c.Get(l.url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(b)
	for _, want := range []string{
		`sandbank_runs_total{engine="goja",outcome="ok"} 1`,
		`sandbank_runs_total{engine="starlark",outcome="scriptError"} 1`,
		`sandbank_run_duration_seconds_count{engine="goja"} 1`,
		`sandbank_queue_depth 0`,
		`sandbank_runs_in_flight{engine="goja"} 0`,
		`sandbank_rejected_requests_total{reason="shuttingDown"} 1`,
		`sandbank_http_requests_total{code="200",route="/v1/runs"} 2`,
		`go_goroutines`,
	} {
		assert.Contains(t, text, want)
	}
}

// TestVerifiedCapabilities: the kit runs once per engine, in the
// background, on the first listing; later listings show its verdict.
func TestVerifiedCapabilities(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	verify := func(ctx context.Context, e registry.Entry) (*conformance.Report, error) {
		calls.Add(1)
		<-release
		switch e.Engine {
		case "goja":
			return &conformance.Report{Cases: []conformance.CaseResult{{Name: "echo", Status: conformance.StatusPass}},
				Proofs: []conformance.Proof{{Capability: "network=none", Proven: true, By: []string{"network: pass"}}}}, nil
		case "starlark":
			return &conformance.Report{Cases: []conformance.CaseResult{{Name: "echo", Status: conformance.StatusFail}}}, nil
		}
		return nil, errors.New("kit refused")
	}
	l := startServer(t, testRegistry(t), &Options{Verify: verify})
	c := &http.Client{Timeout: time.Minute}
	list := func() map[string]Verification {
		resp, err := c.Get(l.url + "/v1/engines")
		require.NoError(t, err)
		defer resp.Body.Close()
		var out EngineList
		require.NoError(t, jsonDecode(resp.Body, &out))
		m := map[string]Verification{}
		for _, e := range out.Engines {
			m[e.Engine] = e.Verified
		}
		return m
	}
	for _, v := range list() {
		assert.Equal(t, VerifyPending, v.Status)
	}
	for range 5 {
		list() // more listings start nothing new
	}
	close(release)
	waitFor(t, func() bool {
		m := list()
		return m["goja"].Status != VerifyPending && m["starlark"].Status != VerifyPending && m["quickjs"].Status != VerifyPending
	})
	m := list()
	assert.Equal(t, VerifyPassed, m["goja"].Status)
	assert.True(t, m["goja"].Proofs[0].Proven)
	assert.NotNil(t, m["goja"].CheckedAt)
	assert.Equal(t, VerifyFailed, m["starlark"].Status)
	assert.Equal(t, []string{"echo"}, m["starlark"].Failed)
	assert.Equal(t, VerifyError, m["quickjs"].Status)
	assert.Equal(t, int64(3), calls.Load(), "once per engine")

	// Without a verifier: unchecked.
	l2 := startServer(t, testRegistry(t), nil)
	resp, err := c.Get(l2.url + "/v1/engines")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out EngineList
	require.NoError(t, jsonDecode(resp.Body, &out))
	require.Len(t, out.Engines, 3)
	for _, e := range out.Engines {
		assert.Equal(t, VerifyUnchecked, e.Verified.Status)
		assert.Equal(t, e.Engine != "quickjs", e.Default, e.Engine)
	}
}

// fakeListener is a listener that claims an address.
type fakeListener struct {
	net.Listener
	addr net.Addr
}

func (f fakeListener) Addr() net.Addr { return f.addr }

// TestDevModeServesOnlyLoopback: without tenants, Serve refuses a
// listener that is not on a loopback address.
func TestDevModeServesOnlyLoopback(t *testing.T) {
	s, err := New(testRegistry(t), nil)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for _, a := range []string{"10.0.0.1:80", "[2001:db8::1]:80", "0.0.0.0:80", "[::]:80"} {
		addr, err := net.ResolveTCPAddr("tcp", a)
		require.NoError(t, err)
		err = s.Serve(fakeListener{ln, addr})
		assert.ErrorContains(t, err, "loopback", a)
		assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err), a)
	}
	for _, a := range []string{"127.0.0.1:80", "[::1]:80", "127.8.9.10:1"} {
		addr, err := net.ResolveTCPAddr("tcp", a)
		require.NoError(t, err)
		assert.True(t, IsLoopback(addr), a)
	}
	require.NoError(t, s.Close())
}

// TestNewRefusesBadOptions: every refusal is the caller's invalid call,
// never retryable.
func TestNewRefusesBadOptions(t *testing.T) {
	_, err := New(nil, nil)
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
	for i, o := range []Options{{MaxQueue: -1}, {QueueTimeout: -1}, {MaxBodyBytes: -1}, {ReadTimeout: -1}, {MaxConcurrentRuns: -1}} {
		_, err := New(testRegistry(t), &o)
		assert.ErrorIs(t, err, ErrInvalidOptions, fmt.Sprint(i))
		assert.ErrorIs(t, err, effect.ErrInvalidCall, fmt.Sprint(i))
		assert.False(t, effect.Retryable(err), fmt.Sprint(i))
	}

	// A tenant's packages need Options.Packages: without, they would be
	// refused at every run of the tenant (pool.Pool.Effect).
	set, err := tenant.Parse([]byte(`{"tenants":[{"name":"a","keys":["` + tenant.HashKey(strings.Repeat("k", 40)) + `"],"packages":["numpy"]}]}`))
	require.NoError(t, err)
	_, err = New(testRegistry(t), &Options{Tenants: set})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "packages")
}

// TestTenantCeiling: a tenant's ceiling lowers the server's; a run without
// limits gets the ceiling, one above it is a 400.
func TestTenantCeiling(t *testing.T) {
	k, d, _ := tenant.NewKey()
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"a","keys":[%q],"limits":{"wallClock":"1s","memoryBytes":8388608}}]}`, d))
	require.NoError(t, err)
	l := startServer(t, testRegistry(t), &Options{Tenants: set})
	c := &http.Client{Timeout: time.Minute}
	code, _, body := post(t, c, l.url+"/v1/runs", k, map[string]any{"engine": "goja", "source": "1"})
	require.Equal(t, 200, code)
	limits := body["receipt"].(map[string]any)["limits"].(map[string]any)
	assert.Equal(t, 1e9, limits["wallClockNs"])
	assert.Equal(t, 8388608.0, limits["memoryBytes"])
	code, _, body = post(t, c, l.url+"/v1/runs", k, map[string]any{"engine": "goja", "source": "1", "limits": map[string]int{"wallClockMs": 500}})
	require.Equal(t, 200, code)
	assert.Equal(t, 5e8, body["receipt"].(map[string]any)["limits"].(map[string]any)["wallClockNs"])
	for _, lim := range []map[string]int{{"wallClockMs": 1001}, {"memoryBytes": 8388609}} {
		code, _, body = post(t, c, l.url+"/v1/runs", k, map[string]any{"engine": "goja", "source": "1", "limits": lim})
		assert.Equal(t, 400, code, "%v", lim)
		assert.Equal(t, KindInvalidCall, body["kind"])
	}
}
