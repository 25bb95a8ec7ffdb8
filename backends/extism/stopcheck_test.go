package extism

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestStopCheckKeepsGCResponsive: a plugin that repeats memory.fill and
// memory.copy over 256 MiB of memory (runaway_native) does not hold up a
// garbage collection another goroutine asks for, and is stopped at its
// wall clock. The bulk operations run in chunks with a visit to Go
// between them; without the stop check (or with unchunked bulk
// operations) runtime.GC() waits for the plugin's whole operation, or
// for ever. The bound is 500 ms (measured: tens of ms at a load average
// of 20 on two cores).
func TestStopCheckKeepsGCResponsive(t *testing.T) {
	b := newTestBackend(t, nil)
	type result struct {
		out spi.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: fixture(t, "runaway_native"), Input: json.RawMessage(`{}`),
			Limits: spi.Limits{WallClock: 3 * time.Second, MemoryBytes: 256 << 20}})
		done <- result{out, err}
	}()
	time.Sleep(time.Second) // compiled, grown, filling
	var worst time.Duration
	for range 5 {
		start := time.Now()
		runtime.GC()
		worst = max(worst, time.Since(start))
	}
	select {
	case r := <-done:
		t.Fatalf("the plugin ended before the collections: %v %v", r.out, r.err)
	default:
	}
	require.Less(t, worst, 500*time.Millisecond, "runtime.GC() waited for the plugin")
	t.Logf("worst runtime.GC() during the plugin's bulk loop: %v", worst)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, spi.Limited(spi.LimitWallClock), r.out)
}
