package extism

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestStopCheckKeepsGCResponsive: a plugin that repeats memory.fill and
// memory.copy over 256 MiB of memory (runaway_native) does not hold up a
// garbage collection another goroutine asks for, and is stopped at its
// wall clock. The bulk operations run in chunks with a visit to Go
// between them; without the stop check (or with unchunked bulk
// operations) runtime.GC() waits for the plugin's whole operation, or
// for ever. The test counts the collections another goroutine completes
// while the plugin runs, instead of timing them: it needs 5 during a
// 3 s run (measured: 139 and 229 at load averages of 4 on two cores); a
// plugin that held its goroutine for the whole operation would let at
// most the few that fit before its first bulk operation complete. (It
// timed them against 500 ms before, and failed at load 10.)
func TestStopCheckKeepsGCResponsive(t *testing.T) {
	b := newTestBackend(t, nil)
	instantiated := make(chan struct{})
	var once sync.Once
	b.afterInstantiate = func() { once.Do(func() { close(instantiated) }) }
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
	select {
	case <-instantiated:
	case r := <-done:
		t.Fatalf("the plugin ended before it was instantiated: %v %v", r.out, r.err)
	}
	var collections atomic.Int64
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
	r := <-done
	during := collections.Load()
	close(stop)
	<-gcDone
	t.Logf("collections completed during the plugin's bulk loop: %d", during)
	assert.GreaterOrEqual(t, during, int64(5), "runtime.GC() waited for the plugin")
	require.NoError(t, r.err)
	require.Equal(t, spi.Limited(spi.LimitWallClock), r.out)
}
