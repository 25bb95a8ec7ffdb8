package extism

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	xt "github.com/extism/go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/sandbank/sandbank/spi"
)

// watchdog fails the test when f has not returned within d: a guard
// against hangs, not a timing assertion.
func watchdog(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not return within %v", d)
	}
}

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    *Options
		wantErr string
		network spi.Network
	}{
		{name: "nil means defaults", opts: nil, network: spi.NetworkNone},
		{name: "zero value", opts: &Options{}, network: spi.NetworkNone},
		{name: "allowed host", opts: &Options{AllowedHosts: []string{"api.example.com"}}, network: spi.NetworkAllowlist},
		{name: "allowed subdomains", opts: &Options{AllowedHosts: []string{"*.example.com"}}, network: spi.NetworkAllowlist},
		{name: "negative cache", opts: &Options{ModuleCacheSize: -1}, wantErr: "extism: module cache size -1 is negative"},
		{name: "empty host", opts: &Options{AllowedHosts: []string{""}}, wantErr: "extism: empty allowed host"},
		{name: "every host", opts: &Options{AllowedHosts: []string{"*"}}, wantErr: "must be a host name"},
		{name: "star dot", opts: &Options{AllowedHosts: []string{"*."}}, wantErr: "matches every host"},
		{name: "host with port", opts: &Options{AllowedHosts: []string{"127.0.0.1:8080"}}, wantErr: "must be a host name"},
		{name: "url", opts: &Options{AllowedHosts: []string{"https://example.com"}}, wantErr: "must be a host name"},
		{name: "inner pattern", opts: &Options{AllowedHosts: []string{"a*.example.com"}}, wantErr: "must be a host name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.opts)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.True(t, strings.HasPrefix(err.Error(), "extism: "))
				return
			}
			require.NoError(t, err)
			defer b.Close()
			c := b.Capabilities()
			require.NoError(t, c.Validate())
			assert.Equal(t, spi.Capabilities{
				Language:    "wasm",
				Network:     tt.network,
				WallClock:   spi.WallClockHard,
				Memory:      true,
				CPU:         false,
				FreshPerRun: true,
				HostCalls:   true,
				Logs:        true,
			}, c)
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	b := newTestBackend(t, nil)
	echo := fixture(t, "echo")
	tests := []struct {
		name   string
		input  string
		limits spi.Limits
		want   string
	}{
		{"no wall clock", `{}`, spi.Limits{MemoryBytes: 1 << 20}, "extism: wall clock limit must be positive"},
		{"no memory", `{}`, spi.Limits{WallClock: time.Second}, "extism: memory limit must be positive"},
		{"empty input", ``, testLimits, "extism: empty input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eval(t, b, echo, tt.input, tt.limits)
			assert.EqualError(t, err, tt.want)
		})
	}
}

// TestOutcomes maps every way a run can end to its outcome.
func TestOutcomes(t *testing.T) {
	const rich = `{"astral":"𝄞 😀","esc":"\"\\\/\b\f\n\r\t\u0001","big":9007199254740991,"neg":-2147483649,"frac":-0.5,"nest":[[[{"a":[1,2,{"b":null}]}]]]}`
	tests := []struct {
		name      string
		script    []byte
		input     string
		limits    spi.Limits
		kind      spi.OutcomeKind
		value     string // for KindOK: exact bytes
		errName   string // for KindThrew
		message   string // for KindThrew: contained in the message
		limitKind spi.LimitKind
	}{
		{name: "echo", script: fixture(t, "echo"), input: `{"a":[1,"two"]}`, kind: spi.KindOK, value: `{"a":[1,"two"]}`},
		{name: "rich value comes back byte for byte", script: fixture(t, "rich_value"), input: rich, kind: spi.KindOK, value: rich},
		{name: "error_set and non-zero return", script: fixture(t, "throw"), input: `{"message":"boom \u00e9 \ud834\udd1e \"q\""}`,
			kind: spi.KindThrew, errName: "", message: `boom é 𝄞 "q"`},
		{name: "error_set with return code 0", script: testdata(t, "error_zero"), input: `{}`, kind: spi.KindThrew, message: "soft failure"},
		{name: "non-zero return without error", script: testdata(t, "returns_code"), input: `{}`,
			kind: spi.KindThrew, message: "extism: the plugin returned code 7 without an error message"},
		{name: "trap", script: testdata(t, "traps"), input: `{}`, kind: spi.KindThrew, errName: NameTrap, message: "unreachable"},
		// A generous clock: reaching the overflow takes seconds under the
		// race detector, and a trap after the clock is the clock's limit.
		{name: "stack overflow is a trap", script: fixture(t, "deep_recursion"), input: `{}`, limits: spi.Limits{WallClock: 25 * time.Second, MemoryBytes: 32 << 20}, kind: spi.KindThrew, errName: NameTrap, message: "stack overflow"},
		{name: "output not JSON", script: testdata(t, "not_json"), input: `{}`, kind: spi.KindThrew, errName: NameOutputError, message: "not JSON text"},
		{name: "no output", script: testdata(t, "no_output"), input: `{}`, kind: spi.KindThrew, errName: NameOutputError},
		{name: "not a module", script: []byte("function run() {}"), input: `{}`, kind: spi.KindThrew, errName: NameCompileError, message: "not a valid wasm module"},
		{name: "invalid module", script: fixture(t, "syntax_error"), input: `{}`, kind: spi.KindThrew, errName: NameCompileError, message: "not a valid wasm module"},
		{name: "import from another module", script: testdata(t, "imports_env"), input: `{}`, kind: spi.KindThrew, errName: NameCompileError, message: `imports from "env"`},
		{name: "unknown kernel import", script: testdata(t, "imports_unknown_kernel"), input: `{}`, kind: spi.KindThrew, errName: NameCompileError, message: "cannot be instantiated"},
		{name: "WASI import with WASI off", script: testdata(t, "wasi_probe"), input: `{}`, kind: spi.KindThrew, errName: NameCompileError, message: `imports from "wasi_snapshot_preview1"`},
		{name: "no run export", script: testdata(t, "no_run"), input: `{}`, kind: spi.KindThrew, errName: NameCompileError, message: `does not export a function "run"`},
		{name: "run with parameters", script: testdata(t, "run_takes_params"), input: `{}`, kind: spi.KindThrew, errName: NameCompileError, message: "must take no parameters"},
		{name: "runaway loop", script: fixture(t, "runaway_loop"), input: `{}`, limits: spi.Limits{WallClock: 50 * time.Millisecond, MemoryBytes: 32 << 20},
			kind: spi.KindLimit, limitKind: spi.LimitWallClock},
		{name: "runaway bulk memory", script: fixture(t, "runaway_native"), input: `{}`, limits: spi.Limits{WallClock: 50 * time.Millisecond, MemoryBytes: 8 << 20},
			kind: spi.KindLimit, limitKind: spi.LimitWallClock},
		{name: "allocation bomb in the plugin's memory", script: fixture(t, "allocation_bomb"), input: `{}`, limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 8 << 20},
			kind: spi.KindLimit, limitKind: spi.LimitMemory},
		{name: "allocation bomb in the kernel's memory", script: testdata(t, "kernel_bomb"), input: `{}`, limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 8 << 20},
			kind: spi.KindLimit, limitKind: spi.LimitMemory},
		{name: "declared memory over the cap", script: testdata(t, "big_memory"), input: `{}`, limits: spi.Limits{WallClock: time.Second, MemoryBytes: 4 << 20},
			kind: spi.KindLimit, limitKind: spi.LimitMemory},
		{name: "declared memory within the cap", script: testdata(t, "big_memory"), input: `{}`, limits: spi.Limits{WallClock: time.Second, MemoryBytes: 16 << 20},
			kind: spi.KindThrew, errName: NameOutputError},
		{name: "cap below the kernel's own memory", script: fixture(t, "echo"), input: `{}`, limits: spi.Limits{WallClock: time.Second, MemoryBytes: 512 << 10},
			kind: spi.KindLimit, limitKind: spi.LimitMemory},
		{name: "input that does not fit", script: fixture(t, "input_too_big"), input: `"` + strings.Repeat("x", 3<<20) + `"`,
			limits: spi.Limits{WallClock: time.Second, MemoryBytes: 4 << 20}, kind: spi.KindInputTooLarge},
		{name: "input that fits once but leaves no room to read it", script: fixture(t, "input_too_big"), input: `"` + strings.Repeat("x", 2<<20) + `"`,
			limits: spi.Limits{WallClock: time.Second, MemoryBytes: 4 << 20}, kind: spi.KindInputTooLarge},
		{name: "input that fits", script: fixture(t, "input_too_big"), input: `"` + strings.Repeat("x", 3<<20) + `"`,
			limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 16 << 20}, kind: spi.KindOK, value: `"` + strings.Repeat("x", 3<<20) + `"`},
		{name: "no escape", script: fixture(t, "no_escape"), input: `{}`, kind: spi.KindOK, value: `{"found":[],"clock":null}`},
		{name: "large output", script: fixture(t, "composition_output"), input: `{}`, kind: spi.KindOK, value: `"` + strings.Repeat("x", 2_000_000) + `"`},
	}
	b := newTestBackend(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limits := tt.limits
			if limits == (spi.Limits{}) {
				limits = testLimits
			}
			var got spi.Outcome
			var err error
			watchdog(t, 30*time.Second, func() { got, err = eval(t, b, tt.script, tt.input, limits) })
			require.NoError(t, err)
			require.Equal(t, tt.kind, got.Kind, "outcome %+v", clipOutcome(got))
			switch tt.kind {
			case spi.KindOK:
				assert.Equal(t, tt.value, string(got.Value))
			case spi.KindThrew:
				assert.Equal(t, tt.errName, got.Name)
				assert.Contains(t, got.Message, tt.message)
			case spi.KindLimit:
				assert.Equal(t, tt.limitKind, got.Limit)
			}
		})
	}
}

func clipOutcome(o spi.Outcome) spi.Outcome {
	if len(o.Value) > 200 {
		o.Value = o.Value[:200]
	}
	if len(o.Message) > 200 {
		o.Message = o.Message[:200]
	}
	return o
}

// TestLongErrorKeepsEveryByte: the backend passes the plugin's error text
// on whole (the effect bounds and scrubs it), invalid UTF-8 included.
func TestLongErrorKeepsEveryByte(t *testing.T) {
	b := newTestBackend(t, nil)
	got, err := eval(t, b, fixture(t, "composition_throw"), `{}`, testLimits)
	require.NoError(t, err)
	require.Equal(t, spi.KindThrew, got.Kind)
	assert.Len(t, got.Message, 100100)
	assert.True(t, strings.HasPrefix(got.Message, "composition_throw: "))
	assert.Contains(t, got.Message, "\xed\xa0\x80")
}

// TestMemoryBudgetIsCombined: the plugin's and the kernel's memories share
// one budget. big_memory declares 2.5 MiB, the kernel 1 MiB: each is under
// a 3 MiB per-memory cap, together they are not.
func TestMemoryBudgetIsCombined(t *testing.T) {
	b := newTestBackend(t, nil)
	got, err := eval(t, b, testdata(t, "big_memory"), `{}`, spi.Limits{WallClock: time.Second, MemoryBytes: 3 << 20})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitMemory), got)
}

// TestTrapWithoutRefusalIsNotMemory: a trap is a memory limit only when a
// grow was refused (or a memory is at its cap), not merely because much of
// the budget is in use: here the input fills well over half of it.
func TestTrapWithoutRefusalIsNotMemory(t *testing.T) {
	b := newTestBackend(t, nil)
	got, err := eval(t, b, testdata(t, "traps"), `"`+strings.Repeat("y", 600<<10)+`"`, spi.Limits{WallClock: time.Second, MemoryBytes: 3 << 20})
	require.NoError(t, err)
	assert.Equal(t, NameTrap, got.Name)
}

func TestWASIEnabledHasNoHostAccess(t *testing.T) {
	t.Setenv("SANDBANK_SECRET", "do not leak")
	b := newTestBackend(t, &Options{EnableWASI: true})
	got, err := eval(t, b, testdata(t, "wasi_probe"), `{}`, testLimits)
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, got.Kind, "%+v", got)
	var r struct {
		Preopens int   `json:"preopens"`
		Environ  int   `json:"environ"`
		Clock    int64 `json:"clock"`
	}
	require.NoError(t, json.Unmarshal(got.Value, &r))
	assert.Zero(t, r.Preopens, "preopened directories")
	assert.Zero(t, r.Environ, "environment variables")
	seen := time.Unix(0, r.Clock)
	assert.Greater(t, time.Since(seen).Abs(), 24*time.Hour, "the plugin's clock reads the host's: %v", seen)
}

func TestFreshInstancePerRun(t *testing.T) {
	b := newTestBackend(t, nil)
	script := fixture(t, "fresh_per_run")
	for i := range 16 {
		got, err := eval(t, b, script, `{}`, testLimits)
		require.NoError(t, err)
		assert.Equal(t, `{"runs":1}`, string(got.Value), "run %d", i+1)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			got, err := eval(t, b, script, `{}`, testLimits)
			assert.NoError(t, err)
			assert.Equal(t, `{"runs":1}`, string(got.Value))
		})
	}
	wg.Wait()
	assert.Equal(t, 1, b.modules.len(), "one compiled module for all runs")
}

// TestFreshPerRunProbeSeesReuse checks the probe itself: on ONE instance
// called twice, both of its counters survive and it answers 2.
func TestFreshPerRunProbeSeesReuse(t *testing.T) {
	ctx := context.Background()
	p, err := xt.NewPlugin(ctx, xt.Manifest{Wasm: []xt.Wasm{xt.WasmData{Data: fixture(t, "fresh_per_run")}}}, xt.PluginConfig{}, nil)
	require.NoError(t, err)
	defer p.Close(ctx)
	_, out, err := p.Call("run", []byte(`{}`))
	require.NoError(t, err)
	assert.Equal(t, `{"runs":1}`, string(out))
	_, out, err = p.Call("run", []byte(`{}`))
	require.NoError(t, err)
	assert.Equal(t, `{"runs":2}`, string(out))
}

// TestClockArmedAtCall: compiling and instantiating are not charged to the
// script. The hooks stall both phases for longer than the wall clock; the
// run must still finish with its value.
func TestClockArmedAtCall(t *testing.T) {
	b := newTestBackend(t, nil)
	const wall = 50 * time.Millisecond
	b.afterCompile = func() { time.Sleep(3 * wall) }
	b.afterInstantiate = func() { time.Sleep(3 * wall) }
	got, err := eval(t, b, fixture(t, "echo"), `{"ok":true}`, spi.Limits{WallClock: wall, MemoryBytes: 32 << 20})
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage(`{"ok":true}`)), got)
}

// TestSDKIgnoresContextWithoutTimeout records why the backend always sets
// a timeout: a plugin compiled the plain way, without a manifest timeout,
// runs to completion even with a context cancelled before the call.
func TestSDKIgnoresContextWithoutTimeout(t *testing.T) {
	ctx := context.Background()
	// Its own compilation cache: the backend's runtimes compile with
	// termination checks, which must not leak into this one.
	cfg := wazero.NewRuntimeConfig().WithCompilationCache(wazero.NewCompilationCache())
	p, err := xt.NewPlugin(ctx, xt.Manifest{Wasm: []xt.Wasm{xt.WasmData{Data: testdata(t, "count_loop")}}}, xt.PluginConfig{RuntimeConfig: cfg}, nil)
	require.NoError(t, err)
	defer p.Close(ctx)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	rc, out, err := p.CallWithContext(cancelled, "run", []byte(`{}`))
	require.NoError(t, err, "the SDK stopped on the context after all")
	assert.Zero(t, rc)
	assert.Equal(t, "1", string(out))

	// The backend, given the same cancelled context mid-way, stops.
	b := newTestBackend(t, nil)
	runCtx, stop := context.WithCancel(ctx)
	b.afterInstantiate = stop
	_, err = b.Evaluate(runCtx, spi.Request{Script: testdata(t, "count_loop"), Input: json.RawMessage(`{}`),
		Limits: spi.Limits{WallClock: time.Hour, MemoryBytes: 32 << 20}})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestCancellation(t *testing.T) {
	b := newTestBackend(t, nil)
	loop := fixture(t, "abort_mid_run")
	limits := spi.Limits{WallClock: time.Hour, MemoryBytes: 32 << 20}

	t.Run("before the call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := b.Evaluate(ctx, spi.Request{Script: loop, Input: json.RawMessage(`{}`), Limits: limits})
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("mid-run", func(t *testing.T) {
		// The cancellation lands once the instance is ready, as the call
		// begins: the loop never ends by itself, so the run ends with
		// the context's error or not at all.
		b := newTestBackend(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.afterInstantiate = func() { go cancel() }
		var err error
		watchdog(t, 30*time.Second, func() {
			_, err = b.Evaluate(ctx, spi.Request{Script: loop, Input: json.RawMessage(`{}`), Limits: limits})
		})
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("effect deadline before the wall clock", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var err error
		watchdog(t, 30*time.Second, func() {
			_, err = b.Evaluate(ctx, spi.Request{Script: loop, Input: json.RawMessage(`{}`), Limits: limits})
		})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestNoNetworkRefusesTheRequest(t *testing.T) {
	canary, hits := countingServer(t, "127.0.0.1")
	b := newTestBackend(t, nil)
	got, err := eval(t, b, fixture(t, "no_network"), `{"url":"`+canary+`/x"}`, testLimits)
	require.NoError(t, err)
	assert.Equal(t, NameTrap, got.Name)
	assert.Contains(t, got.Message, "is not allowed")
	assert.Zero(t, hits.Load(), "the canary saw a request")
}

func TestCloseRefusesLaterRuns(t *testing.T) {
	b, err := newBackend(nil)
	require.NoError(t, err)
	_, err = eval(t, b, fixture(t, "echo"), `{}`, testLimits)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close twice")
	_, err = eval(t, b, fixture(t, "echo"), `{}`, testLimits)
	assert.True(t, errors.Is(err, errClosed), "%v", err)
}

func TestWarm(t *testing.T) {
	b := newTestBackend(t, nil)
	require.NoError(t, b.Warm(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, b.Warm(ctx), context.Canceled)
}

// TestWarmReturnsWhenItsContextEnds: wazero's compiler does not watch a
// context, so Warm leaves its compile running when its context ends, and
// Close waits for that compile before it closes the compilation cache the
// compile writes to (under -race, closing under it is a data race).
func TestWarmReturnsWhenItsContextEnds(t *testing.T) {
	b, err := newBackend(nil)
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	b.beforeKernel = func() {
		close(entered)
		<-release
	}
	ctx, cancel := context.WithCancel(context.Background())
	warmed := make(chan error, 1)
	go func() { warmed <- b.Warm(ctx) }()
	<-entered
	cancel()
	require.ErrorIs(t, <-warmed, context.Canceled, "Warm returns while its compile goes on")

	closed := make(chan struct{})
	go func() {
		assert.NoError(t, b.Close())
		close(closed)
	}()
	close(release) // the compile finishes now, and Close closes after it
	<-closed
	assert.ErrorIs(t, b.Warm(context.Background()), errClosed, "no Warm after Close")
}

func TestFunctionName(t *testing.T) {
	b := newTestBackend(t, &Options{FunctionName: "main"})
	got, err := eval(t, b, testdata(t, "no_run"), `{}`, testLimits)
	require.NoError(t, err)
	// main returns 0 without output.
	assert.Equal(t, NameOutputError, got.Name)
	got, err = eval(t, b, fixture(t, "echo"), `{}`, testLimits)
	require.NoError(t, err)
	assert.Contains(t, got.Message, `does not export a function "main"`)
}
