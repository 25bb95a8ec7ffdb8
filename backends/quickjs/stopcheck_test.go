package quickjs

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/spi"
)

// TestStopCheckKeepsGCResponsive: a tight JavaScript loop, compiled wasm
// code that never calls the host on its own, does not hold up the
// garbage collections another goroutine asks for. Without the stop
// check the goroutine running the guest cannot be preempted, and
// runtime.GC() waits for the loop to end; so the test counts the
// collections that complete while the loop runs, and needs several.
//
// Nothing here is timed. The loop's length is fuel (a count of units, the
// same on every machine), and the collections are counted up to the
// moment the run concludes (the observe hook, before Evaluate returns).
// Without the stop check at most one collection completes, at the loop's
// end; with it, one completes every few milliseconds (measured: 1-65 ms
// at a load average of 25, 1.45 s once at load 10), and the loop runs for
// seconds (2^29 units: about 4 s on an idle core, 200-250 collections),
// on a loaded machine longer still, as the collections are slowed too.
func TestStopCheckKeepsGCResponsive(t *testing.T) {
	const fuel = 1 << 29
	for _, mode := range []Mode{ModeParked, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			b := newBackend(t, &Options{Mode: mode, ColdStartAllowance: 10 * time.Minute, Fuel: fuel})
			require.NoError(t, b.Warm(t.Context()))
			var collections, atConclusion atomic.Int64
			atConclusion.Store(-1)
			b.observe = func(jsguest.Facts) { atConclusion.CompareAndSwap(-1, collections.Load()) }
			looping := newStarted()
			req := spi.Request{
				Script: []byte(`console.log("looping"); for (;;) {}`),
				Input:  []byte("null"),
				Limits: spi.Limits{WallClock: time.Hour},
				Logs:   looping,
			}
			type result struct {
				out spi.Outcome
				err error
			}
			done := make(chan result, 1)
			go func() { out, err := b.Evaluate(context.Background(), req); done <- result{out, err} }()
			var r result
			select {
			case <-looping.c:
			case r = <-done:
				t.Fatalf("the run ended before it logged: %+v, %v", r.out, r.err)
			}
			stop := make(chan struct{})
			gcDone := make(chan struct{})
			go func() {
				defer close(gcDone)
				for {
					select {
					case <-stop:
						return
					default:
					}
					runtime.GC()
					collections.Add(1)
				}
			}()
			r = <-done
			close(stop)
			<-gcDone
			require.NoError(t, r.err)
			require.Equal(t, spi.LimitCPU, r.out.Limit, "the loop ends when its fuel is spent: %+v", r.out)
			n := atConclusion.Load()
			t.Logf("collections completed during a loop of %d units: %d", fuel, n)
			assert.GreaterOrEqual(t, n, int64(3), "runtime.GC() waited for the guest's loop")
		})
	}
}
