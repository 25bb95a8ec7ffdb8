package quickjs

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/spi"
)

func TestParkedInstancesAreReused(t *testing.T) {
	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 2})
	require.NoError(t, b.Warm(t.Context()))
	require.Equal(t, int64(2), b.boots.Load())
	for i := range 50 {
		out := eval(t, b, `globalThis.n = (globalThis.n || 0) + 1; [n, input]`, `{"i":1}`, spi.Limits{})
		require.Equal(t, spi.KindOK, out.Kind, "run %d: %s", i, out.Message)
		assert.JSONEq(t, `[1,{"i":1}]`, string(out.Value))
	}
	t.Logf("boots %d reuses %d", b.boots.Load(), b.reuses.Load())
	assert.Equal(t, int64(50), b.reuses.Load())
	assert.Equal(t, int64(2), b.boots.Load())
}

// TestParkedRestoreIsComplete checks, before every run, that the instance
// is back at its park point: all of linear memory, every mutable global,
// the clocks and the random source. (The tables need no check: the
// static-tables proof of internal/wasm/rewrite refuses a module that could
// change one; see TestParkedModeRefusesAWritableTable.)
func TestParkedRestoreIsComplete(t *testing.T) {
	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	var checked, moved, grown atomic.Int64
	var mu sync.Mutex
	var problems []string
	b.restored = func(inst *instance) {
		mem := inst.mod.Memory()
		buf, _ := mem.Read(0, mem.Size())
		var bad []string
		park := len(inst.memory)
		if len(buf) < park || !bytes.Equal(buf[:park], inst.memory) {
			bad = append(bad, "memory")
		} else if slices.ContainsFunc(buf[park:], func(c byte) bool { return c != 0 }) {
			bad = append(bad, "memory above the park point") // a grown memory (growth.go)
		}
		if guestMemoryBytes(inst.mod, mem) != int64(park) {
			bad = append(bad, "guest-visible memory size")
		}
		if len(buf) > park {
			grown.Add(1)
		}
		if !slices.Equal(inst.globals.Save(), inst.globalVals) {
			bad = append(bad, "globals")
		}
		if inst.clock.wall.Load() != inst.wall || inst.clock.mono.Load() != inst.mono {
			bad = append(bad, "clocks")
		}
		if !bytes.Equal(inst.rng.state(), inst.rngState) {
			bad = append(bad, "random")
		}
		mu.Lock()
		problems = append(problems, bad...)
		mu.Unlock()
		checked.Add(1)
	}
	b.onRun = func(inst *instance) {
		// A parked instance left as the last run ended it: the run moved
		// the stack pointer, which the restore must put back.
		if inst.Parked() && inst.Cur == nil && !slices.Equal(inst.globals.Save(), inst.globalVals) {
			moved.Add(1)
		}
	}
	for i := range 20 {
		script := `[Date.now(), Math.random(), typeof performance, input]`
		if i%4 == 1 { // grows the memory, which the instance survives (growth.go)
			script = `globalThis.big = "g".repeat((2 + input) << 20); [big.length, Math.random()]`
		}
		out := eval(t, b, script, fmt.Sprint(i), spi.Limits{})
		require.Equal(t, spi.KindOK, out.Kind, out.Message)
	}
	assert.Empty(t, problems)
	assert.Equal(t, int64(20), checked.Load())
	assert.Positive(t, grown.Load(), "some runs must resume a grown memory, or the test proves less")
	assert.Positive(t, moved.Load(), "the runs must leave globals to restore, or the test proves nothing")
}

// TestParkedInstanceIsDiscarded runs one script on a pool of one parked
// instance and reports whether the next run got the same instance: every
// ending but a clean result or thrown value discards it.
func TestParkedInstanceIsDiscarded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   string
		limits   spi.Limits
		wrapper  func(t *testing.T) string
		cancel   bool
		shipped  bool // the module as shipped (NewWazeroClose): no memory-size pass
		want     spi.OutcomeKind
		discards bool
	}{
		{name: "clean result (control)", script: `input`, want: spi.KindOK},
		{name: "thrown (control)", script: `throw new Error("x")`, want: spi.KindThrew},
		{name: "stack overflow", script: `function f(n) { return n === 0 ? 0 : 1 + f(n - 1); } f(100000)`, want: spi.KindThrew, discards: true},
		{name: "deadline", script: `for (;;) {}`, limits: spi.Limits{WallClock: 20 * time.Millisecond}, want: spi.KindLimit, discards: true},
		{name: "cancel", script: `console.log("looping"); for (;;) {}`, cancel: true, discards: true},
		{name: "memory grew (control: kept, growth.go)", script: `globalThis.s = "y".repeat(4 << 20); s.length`, want: spi.KindOK},
		{name: "memory grew, size not virtualised", script: `globalThis.s = "y".repeat(4 << 20); s.length`, shipped: true, want: spi.KindOK, discards: true},
		{name: "memory refused", script: `globalThis.h = []; for (;;) h.push(new Array(1024).fill(1));`, limits: spi.Limits{MemoryBytes: 4 << 20}, want: spi.KindLimit, discards: true},
		{name: "unexpected WASI call", script: `input`, wrapper: func(t *testing.T) string {
			return patchWrapper(t, `send(P + "S\n");`, `if (G.input === 2) sin.seek(0, 0); send(P + "S\n");`)
		}, want: spi.KindOK, discards: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &Options{Mode: ModeParked, PoolSize: 1}
			var b *Backend
			if tc.shipped {
				var err error
				b, err = NewWazeroClose(opts)
				require.NoError(t, err)
				t.Cleanup(func() { _ = b.Close() })
			} else {
				b = newBackend(t, opts)
			}
			if tc.wrapper != nil {
				w := tc.wrapper(t)
				b.args = func(mem int64) []string { a := jsguest.Args(mem); a[len(a)-1] = w; return a }
			}
			var got []*instance
			b.onRun = func(inst *instance) { got = append(got, inst) }
			limits := tc.limits
			if limits.MemoryBytes == 0 {
				limits.MemoryBytes = DefaultMemoryBytes
			}
			if limits.WallClock == 0 {
				limits.WallClock = 20 * time.Second
			}
			// Boot and settle the instance the test is about.
			require.Equal(t, spi.KindOK, eval(t, b, `input`, `1`, limits).Kind)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			looping := newStarted()
			if tc.cancel {
				go func() { <-looping.c; cancel() }() // once the script is in its loop
			}
			out, err := b.Evaluate(ctx, spi.Request{Script: []byte(tc.script), Input: []byte(`2`), Limits: limits, Logs: looping})
			if tc.cancel {
				require.ErrorIs(t, err, context.Canceled)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.want, out.Kind, out.Message)
			}
			// The next run is correct, on the same instance or a new one.
			next := eval(t, b, `input`, `3`, limits)
			require.Equal(t, spi.OK([]byte(`3`)), next)
			require.Len(t, got, 3)
			require.True(t, got[0] == got[1], "the second run must reuse the first run's instance")
			if tc.discards {
				assert.True(t, got[1] != got[2], "the instance must be discarded")
				// Its replacement was booting before the next run, which
				// waited for it instead of booting a third instance.
				assert.Equal(t, int64(2), b.boots.Load(), "the next run must take the replacement")
			} else {
				assert.True(t, got[1] == got[2], "the instance must be kept")
			}
		})
	}
}
