package quickjs

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
	"github.com/sandbank/sandbank/spi"
)

// recursion is a plain JavaScript recursion input.n frames deep, which
// returns its depth.
const recursion = `function f(n) { return n === 0 ? 0 : 1 + f(n - 1); } f(input.n)`

// overflow is the outcome of a run whose stack ran out.
var overflow = spi.Threw(jsguest.NameStackOverflow, jsguest.MsgStackOverflow)

// TestDeepRecursion runs recursions at several depths in both modes:
// every depth that fits returns its own value, every deeper one is the
// typed RangeError, stopped by the stack pass's check (StackExhausted)
// with the canary intact, and the run after an overflow is correct.
// Without the check, the overflow would clobber the canary (or trap): the
// facts tell the check's stop apart from the canary's.
func TestDeepRecursion(t *testing.T) {
	for _, mode := range []Mode{ModeParked, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			b := newBackend(t, &Options{Mode: mode, PoolSize: 1})
			var mu sync.Mutex
			var last jsguest.Facts
			b.observe = func(f jsguest.Facts) { mu.Lock(); last = f; mu.Unlock() }
			facts := func() jsguest.Facts { mu.Lock(); defer mu.Unlock(); return last }
			for _, n := range []int{10, 200, 1000, 3000} {
				out := eval(t, b, recursion, fmt.Sprintf(`{"n":%d}`, n), spi.Limits{})
				assert.Equal(t, spi.OK([]byte(fmt.Sprint(n))), out, "depth %d", n)
			}
			for _, n := range []int{20000, 100000, 1000000} {
				out := eval(t, b, recursion, fmt.Sprintf(`{"n":%d}`, n), spi.Limits{})
				assert.Equal(t, overflow, out, "depth %d", n)
				f := facts()
				assert.True(t, f.StackExhausted, "depth %d: the stack pass's check must have stopped the run", n)
				assert.True(t, f.CanaryIntact, "depth %d: the check must stop the recursion before the canary", n)
				// The next run, on a new instance in parked mode, is right.
				assert.Equal(t, spi.OK([]byte(`7`)), eval(t, b, recursion, `{"n":7}`, spi.Limits{}), "after depth %d", n)
			}
		})
	}
}

// TestDeepRecursionShapes: recursions that are not plain calls (through
// a getter, a constructor, JSON.parse of deep text, Array.prototype.map's
// callback, an implicit toString, inside a try) end the same
// way when too deep: the RangeError, never a value or a trap.
func TestDeepRecursionShapes(t *testing.T) {
	b := shared(t)
	for name, script := range map[string]string{
		"getter":      `const o = { get x() { return this.x } }; o.x`,
		"constructor": `function C(n) { this.c = n ? new C(n - 1) : null } new C(1e6); 1`,
		"JSON.parse":  `JSON.parse("[".repeat(1e6) + "]".repeat(1e6)).length`,
		"map":         `function m(n) { return n ? [n].map(() => m(n - 1))[0] : 0 } m(1e6)`,
		"toString":    `const o = {}; o.toString = () => "" + o; "" + o`,
		// Unlike V8's, the overflow cannot be caught: the run ends there.
		"try/catch": `function f(n) { return 1 + f(n + 1) } try { f(0) } catch (e) { "caught " + e }`,
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, overflow, eval(t, b, script, "", spi.Limits{}))
		})
	}
}

// TestStackBytesCountsAgainstTheMemoryLimit: the stack is part of the
// run's linear memory, so a limit that holds the engine with a small
// stack does not with a stack as large as the limit.
func TestStackBytesCountsAgainstTheMemoryLimit(t *testing.T) {
	limits := spi.Limits{MemoryBytes: 4 << 20}
	small := newBackend(t, &Options{Mode: ModeFresh, StackBytes: 1 << 20})
	assert.Equal(t, spi.OK([]byte(`1`)), eval(t, small, `1`, "", limits), "control: the engine fits in 4 MiB with a 1 MiB stack")
	large := newBackend(t, &Options{Mode: ModeFresh, StackBytes: 4 << 20})
	assert.Equal(t, spi.Limited(spi.LimitMemory), eval(t, large, `1`, "", limits))
}

func TestStackBytesIsValidated(t *testing.T) {
	for _, n := range []int{-1, 1, 65535, 100 << 10, MaxStackBytes + 64<<10} {
		_, err := New(&Options{StackBytes: n})
		assert.Error(t, err, "StackBytes %d", n)
	}
}

// TestRecursionDepth finds, by bisection, the deepest plain JavaScript
// recursion that fits at several stack sizes, and which bound stopped the
// next deeper one: the stack pass's check or wazero's own native call
// stack, whose ceiling (it stops growing past 50 million bytes in
// v1.12.0, at about 84 MB; about 4.8 KB a JavaScript frame) binds from
// about 5 MiB of C stack on. It checks the default's target of issue 17,
// at least 3,000 frames, and 25,000 at 8 MiB unless wazero's ceiling
// stopped it first. Run with -v for the table of docs/recursion.md:
//
//	go test -run TestRecursionDepth -v ./backends/quickjs/
func TestRecursionDepth(t *testing.T) {
	if testing.Short() {
		t.Skip("bisects the depth with about 80 runs")
	}
	want := map[int]int{DefaultStackBytes: 3000, 8 << 20: 25000}
	for _, size := range []int{256 << 10, DefaultStackBytes, 8 << 20, 64 << 20} {
		b := newBackend(t, &Options{StackBytes: size, PoolSize: 1})
		var mu sync.Mutex
		var last, failed jsguest.Facts
		b.observe = func(f jsguest.Facts) { mu.Lock(); last = f; mu.Unlock() }
		limits := spi.Limits{MemoryBytes: int64(size) + 32<<20}
		fits := func(n int) bool {
			out := eval(t, b, recursion, fmt.Sprintf(`{"n":%d}`, n), limits)
			if out.Kind == spi.KindOK {
				require.Equal(t, fmt.Sprint(n), string(out.Value))
				return true
			}
			require.Equal(t, overflow, out, "depth %d", n)
			mu.Lock()
			failed = last
			mu.Unlock()
			return false
		}
		lo, hi := 0, 1<<20 // fits(lo), !fits(hi)
		require.False(t, fits(hi))
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		// The facts of the run that failed at hi, not of a second run at
		// hi: wazero's native call stack (the bound from about 5 MiB of C
		// stack on) depends by a few frames on how the instance's stack
		// grew before, so a second run at hi can fit.
		f := failed
		require.True(t, f.StackExhausted, "depth %d: %+v", hi, f)
		bound := "the stack pass's check"
		native := nativeStackOverflow(errors.New(f.Trap))
		if native {
			bound = "wazero's native call stack"
		}
		t.Logf("stack %6d KiB: %6d frames; one more stopped by %s", size>>10, lo, bound)
		if !native || size == DefaultStackBytes {
			assert.GreaterOrEqual(t, lo, want[size], "stack of %d bytes", size)
		}
	}
}

// withoutStackCheck returns the module b compiles with the stack pass's
// check made a no-op: the call to the host function and the unreachable
// after it become nops, so the region and the canary stay where they
// are but nothing stops a frame at the bottom.
func withoutStackCheck(t *testing.T, wasm []byte) []byte {
	t.Helper()
	m, err := wasmrewrite.Decode(quickjswasi.QuickJSWASM)
	require.NoError(t, err)
	call := []byte{0x10, byte(m.ImportedFuncs()), 0x00} // call stack_overflow; unreachable
	require.Less(t, m.ImportedFuncs(), uint32(0x80))
	check := append([]byte{0x4b, 0x04, 0x40}, call...) // i32.gt_u; if; …
	n := bytes.Count(wasm, check)
	require.Greater(t, n, 1000, "the check's shape changed: update the test")
	return bytes.ReplaceAll(wasm, check, []byte{0x4b, 0x04, 0x40, 0x01, 0x01, 0x01})
}

// TestCanaryIsTheSecondLine runs over-deep recursions on a module whose
// stack check was removed: the canary at the stack's bottom is then what
// catches the overflow. Every run is the RangeError or a trap (a thrown
// InternalError), never a wrong value; and some runs ended normally with a
// clobbered canary, which without the canary would have been read as
// their result.
func TestCanaryIsTheSecondLine(t *testing.T) {
	b := newBackend(t, &Options{Mode: ModeFresh})
	b.wasm = withoutStackCheck(t, b.wasm)
	var mu sync.Mutex
	clobberedYetEnded, exhausted := 0, 0
	b.observe = func(f jsguest.Facts) {
		mu.Lock()
		defer mu.Unlock()
		if !f.CanaryIntact && f.Ending == jsguest.EndExit {
			clobberedYetEnded++
		}
		if f.StackExhausted {
			exhausted++
		}
	}
	assert.Equal(t, spi.OK([]byte(`3000`)), eval(t, b, recursion, `{"n":3000}`, spi.Limits{}))
	for depth := 3600; depth <= 4200; depth += 11 {
		out := eval(t, b, recursion, fmt.Sprintf(`{"n":%d}`, depth), spi.Limits{WallClock: 20 * time.Second})
		switch {
		case out.Kind == spi.KindOK && string(out.Value) == fmt.Sprint(depth): // it fit
		case out.Kind == spi.KindThrew && (out.Name == jsguest.NameStackOverflow || out.Name == "InternalError"):
		default:
			t.Errorf("depth %d: %+v", depth, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, exhausted, "the check was removed: nothing reports an exhausted stack")
	assert.Positive(t, clobberedYetEnded, "no run ended normally with a clobbered canary: the canary was never needed, so this test proves nothing")
}

// TestParkedRestoreAfterDeepRuns: parked mode restores the C stack only
// from the low-water mark of the runs since the park point up; after
// deep recursions the memory is still exactly the park point's (compared
// in full), and every run's value is right.
func TestParkedRestoreAfterDeepRuns(t *testing.T) {
	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	var mu sync.Mutex
	var problems []string
	var deepest uint64 = 1 << 32
	b.onRun = func(inst *instance) {
		if inst.mod == nil {
			return // booting for this run
		}
		low := inst.mod.ExportedGlobal(wasmrewrite.StackLowName).Get()
		mu.Lock()
		deepest = min(deepest, low)
		mu.Unlock()
	}
	b.restored = func(inst *instance) {
		mem := inst.mod.Memory()
		buf, _ := mem.Read(0, mem.Size())
		if !bytes.Equal(buf, inst.memory) {
			mu.Lock()
			problems = append(problems, "memory")
			mu.Unlock()
		}
	}
	for i, n := range []int{3000, 10, 2500, 3500, 1, 3000} {
		out := eval(t, b, recursion, fmt.Sprintf(`{"n":%d}`, n), spi.Limits{})
		require.Equal(t, spi.OK([]byte(fmt.Sprint(n))), out, "run %d", i)
	}
	assert.Empty(t, problems)
	assert.Equal(t, int64(1), b.boots.Load(), "every run must reuse the one instance")
	mu.Lock()
	defer mu.Unlock()
	assert.Less(t, deepest, uint64(b.layout.Top-3000*200), "the runs must have gone deep, or the test proves nothing")
}
