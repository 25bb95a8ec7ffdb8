//go:build cgo

package wasmtime

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/spi"
)

// TestFuelIsCountedOnlyUnderABudget: a backend with a CPU budget runs on
// the engine that counts fuel, and its runaway ends in the limit cpu
// (the wall clock is a minute, so only the fuel can end it first); a
// backend without one runs on the engine that counts none, whose stores
// refuse fuel altogether.
func TestFuelIsCountedOnlyUnderABudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fuel   uint64
		counts bool
	}{
		{"budget", 100_000, true},
		{"no budget", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, &Options{Fuel: tc.fuel})
			require.Equal(t, tc.counts, b.rt.fuel, "the engine")
			counted := make(chan bool, 1)
			b.observe = func(r *run, _ jsguest.Facts, _ uint64) {
				_, err := r.store.GetFuel()
				counted <- err == nil
			}
			out, err := eval(t, b, `1 + 1`, "", spi.Limits{})
			require.NoError(t, err)
			assert.Equal(t, spi.OK([]byte("2")), out)
			assert.Equal(t, tc.counts, <-counted, "the run's store counts fuel")
			if !tc.counts {
				return
			}
			out, err = eval(t, b, `for (;;) {}`, "", spi.Limits{WallClock: time.Minute})
			require.NoError(t, err)
			<-counted
			assert.Equal(t, spi.Limited(spi.LimitCPU), out, "a runaway under a CPU budget")
		})
	}
}

// TestAFuelFreeRunStopsOnItsWallClock: without fuel only the epoch
// interruption can stop a loop; the wall clock still does, for a loop and
// for one long native operation (1 GiB of memory, so that only the clock
// can stop it). The backend is closed only once its runs returned: a run
// that does not stop fails the test at the watchdog instead of hanging
// Close.
func TestAFuelFreeRunStopsOnItsWallClock(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	require.False(t, b.rt.fuel)
	stopped := true
	for _, tc := range []struct{ name, script string }{
		{"loop", `for (;;) {}`},
		{"native", `"x".repeat(3e8).length`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan spi.Outcome, 1)
			go func() {
				out, err := eval(t, b, tc.script, "", spi.Limits{WallClock: 50 * time.Millisecond, MemoryBytes: 1 << 30})
				assert.NoError(t, err)
				done <- out
			}()
			select {
			case out := <-done:
				assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
			case <-time.After(time.Minute): // a watchdog, not a timing: the wall clock is 50 ms
				stopped = false
				t.Fatal("a run without fuel kept running past its wall clock")
			}
		})
	}
	if stopped {
		assert.NoError(t, b.Close())
	}
}

// TestAFuelFreeRunStopsOnCancel: the same on the caller's cancellation,
// with a wall clock of an hour.
func TestAFuelFreeRunStopsOnCancel(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	require.False(t, b.rt.fuel)
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
		assert.NoError(t, b.Close())
	case <-time.After(time.Minute): // a watchdog: the wall clock is an hour
		t.Fatal("a cancelled run without fuel kept running") // and b is left open: Close would wait for it
	}
}
