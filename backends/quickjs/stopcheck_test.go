package quickjs

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestStopCheckKeepsGCResponsive: a tight JavaScript loop, compiled wasm
// code that never calls the host on its own, does not hold up a garbage
// collection another goroutine asks for, and is stopped at its wall
// clock. Without the stop check the goroutine running the guest cannot
// be preempted, and runtime.GC() waits for the loop to end (here: never);
// the bound is 500 ms (measured: 1-65 ms at a load average of 25 on two
// cores; the margin is for a machine busier still).
func TestStopCheckKeepsGCResponsive(t *testing.T) {
	for _, mode := range []Mode{ModeParked, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			b := newBackend(t, &Options{Mode: mode, ColdStartAllowance: 10 * time.Minute})
			require.NoError(t, b.Warm(t.Context()))
			req := spi.Request{
				Script: []byte("for (;;) {}"),
				Input:  []byte("null"),
				Limits: spi.Limits{WallClock: 2 * time.Second},
			}
			type result struct {
				out spi.Outcome
				err error
			}
			done := make(chan result, 1)
			go func() { out, err := b.Evaluate(context.Background(), req); done <- result{out, err} }()
			time.Sleep(300 * time.Millisecond) // booted, in the loop
			var worst time.Duration
			for range 5 {
				start := time.Now()
				runtime.GC()
				worst = max(worst, time.Since(start))
			}
			select {
			case <-done:
				t.Fatal("the loop ended before the collections: make it longer")
			default:
			}
			require.Less(t, worst, 500*time.Millisecond, "runtime.GC() waited for the guest's loop")
			t.Logf("worst runtime.GC() during a JavaScript loop: %v", worst)
			r := <-done
			require.NoError(t, r.err)
			require.Equal(t, spi.Limited(spi.LimitWallClock), r.out)
		})
	}
}
