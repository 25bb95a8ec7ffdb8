//go:build cgo

package wasmtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	wt "github.com/bytecodealliance/wasmtime-go/v39"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/spi"
)

// bindingDir is the wasmtime binding's module directory.
func bindingDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", bindingModule).Output()
	require.NoError(t, err, "go list the binding's module")
	dir := strings.TrimSpace(string(out))
	require.NotEmpty(t, dir)
	return dir
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestInterruptABI fails loudly when a binding upgrade changes what
// interrupt.go relies on: the C declarations it copies from wasmtime's
// headers, and the layout of wasmtime.Store (its first field is the
// wasmtime_store_t pointer).
func TestInterruptABI(t *testing.T) {
	inc := filepath.Join(bindingDir(t), "build", "include", "wasmtime")
	store, err := os.ReadFile(filepath.Join(inc, "store.h"))
	require.NoError(t, err)
	errh, err := os.ReadFile(filepath.Join(inc, "error.h"))
	require.NoError(t, err)
	for _, want := range []string{
		`WASM_API_EXTERN void wasmtime_store_epoch_deadline_callback( wasmtime_store_t *store, wasmtime_error_t *(*func)(wasmtime_context_t *context, void *data, uint64_t *epoch_deadline_delta, wasmtime_update_deadline_kind_t *update_kind), void *data, void (*finalizer)(void *));`,
		`typedef uint8_t wasmtime_update_deadline_kind_t;`,
		`#define WASMTIME_UPDATE_DEADLINE_CONTINUE 0`,
	} {
		assert.Contains(t, squash(string(store)), want, "wasmtime/store.h changed: update interrupt.go")
	}
	assert.Contains(t, squash(string(errh)), `WASM_API_EXTERN wasmtime_error_t *wasmtime_error_new(const char *);`, "wasmtime/error.h changed: update interrupt.go")

	f := reflect.TypeFor[wt.Store]().Field(0)
	assert.Equal(t, "_ptr", f.Name, "wasmtime.Store changed: update storePointer")
	assert.Equal(t, uintptr(0), f.Offset)
	assert.Equal(t, reflect.Pointer, f.Type.Kind())
}

// TestOutOfFuelIsReadFromTheStore shows why the backend reads fuel
// exhaustion from the store and not from the trap code: the binding's
// wasmtime.OutOfFuel (11) does not match the C API's code (12).
func TestOutOfFuelIsReadFromTheStore(t *testing.T) {
	rt, err := processRuntime(true)
	require.NoError(t, err)
	wasm, err := wt.Wat2Wasm(`(module (func (export "spin") (loop (br 0))))`)
	require.NoError(t, err)
	mod, err := wt.NewModule(rt.engine, wasm)
	require.NoError(t, err)
	store := wt.NewStore(rt.engine)
	defer store.Close()
	require.NoError(t, store.SetFuel(10_000))
	store.SetEpochDeadline(1 << 40)
	inst, err := wt.NewInstance(store, mod, nil)
	require.NoError(t, err)
	_, err = inst.GetFunc(store, "spin").Call(store)
	require.Error(t, err)
	left, ferr := store.GetFuel()
	require.NoError(t, ferr)
	assert.Zero(t, left, "the trap spent all the fuel")
	var trap *wt.Trap
	if assert.ErrorAs(t, err, &trap) && assert.NotNil(t, trap.Code()) {
		code := *trap.Code()
		t.Logf("trap code %d; binding's OutOfFuel %d", code, wt.OutOfFuel)
		assert.Contains(t, []wt.TrapCode{wt.OutOfFuel, wt.OutOfFuel + 1}, code)
	}
}

// fuelUsed runs script on b and returns its outcome and the fuel it
// spent.
func fuelUsed(t *testing.T, b *Backend, script string) (spi.Outcome, uint64) {
	t.Helper()
	var mu sync.Mutex
	var left uint64
	b.observe = func(_ *run, _ jsguest.Facts, fuelLeft uint64) { mu.Lock(); left = fuelLeft; mu.Unlock() }
	out, err := eval(t, b, script, "", spi.Limits{WallClock: time.Minute})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	return out, b.set.fuel - left
}

func TestFuelIsDeterministic(t *testing.T) {
	const script = `let s = 0; for (let i = 0; i < 20000; i++) s += i % 7; ({s, t: JSON.stringify({a: [1, 2, 3]})})`
	b := newBackend(t, &Options{Fuel: 1 << 30})
	out1, used1 := fuelUsed(t, b, script)
	out2, used2 := fuelUsed(t, b, script)
	require.Equal(t, spi.KindOK, out1.Kind, "%+v", out1)
	assert.Equal(t, out1, out2, "same script, same budget: same outcome")
	assert.Equal(t, used1, used2, "same script: same fuel, to the unit")

	// wasmtime checks the fuel at loop heads and calls, so a run may end
	// slightly in debt; what the script needs is the smallest budget it
	// finishes with. Find it (runs are deterministic, so a bisection is).
	finishes := func(fuel uint64) spi.Outcome {
		out, _ := fuelUsed(t, newBackend(t, &Options{Fuel: fuel}), script)
		return out
	}
	lo, hi := uint64(1), used1 // finishes(hi) holds; finishes(lo) does not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if finishes(mid).Kind == spi.KindOK {
			hi = mid
		} else {
			lo = mid
		}
	}
	t.Logf("the script spends %d fuel and needs a budget of %d", used1, hi)
	assert.Equal(t, out1, finishes(hi), "a budget of exactly what the script needs is enough, again")
	assert.Equal(t, spi.Limited(spi.LimitCPU), finishes(hi-1), "one unit less than the script needs is the cpu limit")
	assert.Equal(t, spi.Limited(spi.LimitCPU), finishes(hi-1), "and so it is every time")
}

func TestFuelBudgetStartsWithTheScript(t *testing.T) {
	// The engine's boot and the input's parsing spend far more than this
	// budget; only the script is charged.
	b := newBackend(t, &Options{Fuel: 100_000})
	big := `[` + strings.Repeat(`{"k":"v"},`, 20000) + `1]`
	out, err := eval(t, b, `input.length`, big, spi.Limits{})
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("20001")), out)
	out, err = eval(t, b, `for (;;) {}`, "", spi.Limits{WallClock: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitCPU), out)
}

func TestFakeClock(t *testing.T) {
	out, err := eval(t, shared(t), `[Date.now(), Date.now(), new Date().toISOString(), typeof performance === "undefined"]`, "", spi.Limits{})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	var got []any
	require.NoError(t, jsonUnmarshal(out.Value, &got))
	require.Len(t, got, 4)
	first := got[0].(float64)
	assert.GreaterOrEqual(t, first, 946684800000.0, "the fake clock starts at 2000-01-01")
	assert.Less(t, first, 946684800000.0+60000)
	assert.Equal(t, first+1, got[1].(float64), "one millisecond per reading")
	assert.True(t, strings.HasPrefix(got[2].(string), "2000-01-01T00:00:00."))
	assert.Equal(t, true, got[3])
}

func TestStderrIsBounded(t *testing.T) {
	b := newBackend(t, &Options{MaxStderrBytes: 1000})
	var kept int
	b.observe = func(r *run, _ jsguest.Facts, _ uint64) { kept = len(r.stderr.Bytes()) }
	out, err := eval(t, b, `for (let i = 0; i < 2000; i++) print("x".repeat(1000)); 7`, "", spi.Limits{})
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("7")), out)
	assert.Equal(t, 0, kept, "2 MB printed: log records, none of it kept as stderr text")
}

func TestCancelStopsARunawayPromptly(t *testing.T) {
	b := newBackend(t, &Options{Fuel: MaxFuel}) // only the cancellation can stop the loop
	ctx, cancel := context.WithCancel(context.Background())
	looping := newStarted()
	go func() { <-looping.c; cancel() }() // once the script is in its loop
	done := make(chan error, 1)
	go func() {
		_, err := b.Evaluate(ctx, spi.Request{Script: []byte(`console.log("looping"); for (;;) {}`), Input: []byte(`{}`), Limits: spi.Limits{WallClock: time.Hour}, Logs: looping})
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute): // a watchdog, not a timing: the wall clock is an hour
		t.Fatal("a cancelled run kept running")
	}
}

// TestOnlyTheFlaggedRunStops: stopping one run advances the engine's
// epoch for every run; the others must renew their deadline and go on.
func TestOnlyTheFlaggedRunStops(t *testing.T) {
	b := shared(t)
	done := make(chan struct{})
	var out spi.Outcome
	var err error
	go func() {
		defer close(done)
		out, err = eval(t, b, `let s = 0; for (let i = 0; i < 3e6; i++) s += i & 1; s`, "", spi.Limits{WallClock: time.Minute})
	}()
	kills := 0
	for {
		select {
		case <-done:
			require.NoError(t, err)
			assert.Equal(t, spi.OK([]byte("1500000")), out, "the long run finished despite %d kills beside it", kills)
			assert.Positive(t, kills)
			return
		default:
		}
		o, kerr := eval(t, b, `for (;;) {}`, "", spi.Limits{WallClock: time.Millisecond})
		require.NoError(t, kerr)
		require.Equal(t, spi.Limited(spi.LimitWallClock), o)
		kills++
	}
}

func TestCloseStopsARun(t *testing.T) {
	b, err := New(&Options{Fuel: MaxFuel}) // only Close can stop the loop
	require.NoError(t, err)
	done := make(chan error, 1)
	looping := newStarted()
	go func() {
		_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(`console.log("looping"); for (;;) {}`), Input: []byte(`{}`), Limits: spi.Limits{WallClock: time.Hour}, Logs: looping})
		done <- err
	}()
	select {
	case <-looping.c: // the script is in its loop
	case err := <-done:
		t.Fatalf("the run ended before it logged: %v", err)
	}
	require.NoError(t, b.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(time.Minute):
		t.Fatal("Close did not stop the run")
	}
	_, err = b.Evaluate(context.Background(), spi.Request{Script: []byte(`1`), Input: []byte(`{}`)})
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, b.Close(), "Close is idempotent")
}

func TestColdStartAllowance(t *testing.T) {
	// The input takes tens of milliseconds to parse, far past the
	// allowance, so the timer fires during start-up whatever the load.
	b := newBackend(t, &Options{ColdStartAllowance: time.Nanosecond})
	big := `[` + strings.Repeat(`{"key":"value","n":[1,2,3]},`, 200_000) + `1]`
	_, err := eval(t, b, `1`, big, spi.Limits{MemoryBytes: 512 << 20})
	var se *StartupError
	require.ErrorAs(t, err, &se)
	assert.Regexp(t, regexp.MustCompile(`^wasmtime: start-up phase "\w+" exceeded the cold-start allowance of 1ns$`), se.Error())
}

// TestSmallMemoryLimits: a limit below the module's initial memory (192
// KiB) cannot even be instantiated, and one below what the engine needs to
// boot ends the boot silently (the store limiter refuses growth without
// telling the host); both are the memory limit, never an untyped error.
func TestSmallMemoryLimits(t *testing.T) {
	for _, tt := range []struct {
		kib  int64
		want spi.Outcome
	}{
		{64, spi.Limited(spi.LimitMemory)},  // below the initial memory
		{256, spi.Limited(spi.LimitMemory)}, // above it, below the boot's needs
		{4096, spi.OK([]byte("[1,2,3]"))},
	} {
		out, err := eval(t, shared(t), `input.a`, `{"a":[1,2,3]}`, spi.Limits{MemoryBytes: tt.kib << 10})
		require.NoError(t, err, "%d KiB", tt.kib)
		assert.Equal(t, tt.want, out, "%d KiB", tt.kib)
	}
}

func TestOptionsRefused(t *testing.T) {
	for name, o := range map[string]*Options{
		"fuel":      {Fuel: MaxFuel + 1},
		"coldStart": {ColdStartAllowance: -1},
		"stderr":    {MaxStderrBytes: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(o)
			assert.ErrorContains(t, err, "wasmtime: ")
		})
	}
	_, err := eval(t, shared(t), `1`, "", spi.Limits{WallClock: -1})
	assert.EqualError(t, err, "wasmtime: negative wall clock")
	_, err = eval(t, shared(t), `1`, "", spi.Limits{MemoryBytes: -1})
	assert.EqualError(t, err, "wasmtime: negative memory limit")
}

func TestFirstLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"wasm trap: out of bounds memory access", "wasm trap: out of bounds memory access"},
		{"error while executing at wasm backtrace:\n    0: 0x1a2b - <unknown>!js_call\n    1: 0x2b3c - <unknown>!main\n\nCaused by:\n    0: sandbank: run interrupted by the host\n\nStack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n   1: wasmtime::runtime::vm::traphandlers::raise\n", "sandbank: run interrupted by the host"},
		{"failed to compile\n\nStack backtrace:\n   0: std::backtrace::Backtrace::create\n             at /rustc/library/std/src/backtrace.rs:331:13\n", "failed to compile"},
		{"error while executing at wasm backtrace:\n    0: qjs!dlmalloc\n    1:  0xcceb6 - qjs!malloc\nnote: using the `WASMTIME_BACKTRACE_DETAILS=1` environment variable may show more debugging information\n\nCaused by:\n    wasm trap: call stack exhausted\n", "wasm trap: call stack exhausted"},
		{"\n\n", "no message"},
		{strings.Repeat("x", 300), strings.Repeat("x", 200)},
	} {
		assert.Equal(t, tt.want, firstLine(tt.in))
	}
}

// TestRecursionDepth: a recursion that fits returns its value, a deeper
// one is the thrown RangeError (wasmtime's native stack runs out before
// the stack pass's C stack: see stack.go), never a value or another
// trap. With -v it reports the deepest recursion that fits, bisected:
//
//	go test -run TestRecursionDepth -v ./backends/quickjs/wasmtime/
func TestRecursionDepth(t *testing.T) {
	const f = `function f(n) { return n === 0 ? 0 : 1 + f(n - 1); } f(input.n)`
	overflow := spi.Threw(jsguest.NameStackOverflow, jsguest.MsgStackOverflow)
	b, err := New(nil)
	require.NoError(t, err)
	defer b.Close()
	var mu sync.Mutex
	var last jsguest.Facts
	b.observe = func(_ *run, f jsguest.Facts, _ uint64) { mu.Lock(); last = f; mu.Unlock() }
	fits := func(n int) bool {
		out, err := eval(t, b, f, fmt.Sprintf(`{"n":%d}`, n), spi.Limits{})
		require.NoError(t, err)
		if out.Kind == spi.KindOK {
			require.Equal(t, fmt.Sprint(n), string(out.Value))
			return true
		}
		require.Equal(t, overflow, out, "depth %d", n)
		return false
	}
	for _, n := range []int{190, 1000} {
		assert.True(t, fits(n), "depth %d", n)
	}
	for _, n := range []int{100000, 1000000} {
		assert.False(t, fits(n), "depth %d", n)
	}
	lo, hi := 1000, 100000
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	fits(hi)
	mu.Lock()
	t.Logf("deepest plain recursion: %d frames (C stack %d KiB, native stack %d KiB); one deeper: %s", lo, stackBytes>>10, maxWasmStack>>10, last.Trap)
	mu.Unlock()
}

// TestNudgeRescuesAMissedEpoch: a guest that saw the epoch advance before
// its flag (possible on a weakly ordered CPU) renews its deadline; the
// nudging that follows a stop must still reach it. Here the flag is set
// with no epoch advance at all, so only the nudging can stop the loop.
func TestNudgeRescuesAMissedEpoch(t *testing.T) {
	rt, err := processRuntime(false)
	require.NoError(t, err)
	wasm, err := wt.Wat2Wasm(`(module (func (export "spin") (loop (br 0))))`)
	require.NoError(t, err)
	mod, err := wt.NewModule(rt.engine, wasm)
	require.NoError(t, err)
	store := wt.NewStore(rt.engine)
	f := newStopFlag(rt.engine)
	f.install(store)
	inst, err := wt.NewInstance(store, mod, nil)
	require.NoError(t, err)
	atomic.StoreInt32((*int32)(unsafe.Pointer(f.p)), 1) // the flag, without the epoch
	done := make(chan error, 1)
	go func() {
		_, err := inst.GetFunc(store, "spin").Call(store)
		done <- err
	}()
	go f.nudge()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, interruptMessage)
	case <-time.After(time.Minute): // a watchdog: only the nudging can end the loop
		t.Fatal("the nudging did not reach the guest")
	}
	store.Close()
	f.free()
}
