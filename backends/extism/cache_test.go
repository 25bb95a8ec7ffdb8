package extism

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// countCompiles wraps the backend's compile step with a counter.
func countCompiles(b *Backend) *atomic.Int64 {
	var n atomic.Int64
	inner := b.modules.compile
	b.modules.compile = func(key moduleKey, script []byte) (compiled, error) {
		n.Add(1)
		return inner(key, script)
	}
	return &n
}

func TestModuleCacheCompilesOncePerModule(t *testing.T) {
	b := newTestBackend(t, nil)
	compiles := countCompiles(b)
	echo := fixture(t, "echo")
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			got, err := eval(t, b, echo, `{"n":1}`, testLimits)
			assert.NoError(t, err)
			assert.Equal(t, `{"n":1}`, string(got.Value))
		})
	}
	wg.Wait()
	assert.Equal(t, int64(1), compiles.Load(), "concurrent first runs of one module compile it once")

	// The memory cap is part of the key: wazero fixes it per runtime.
	_, err := eval(t, b, echo, `{}`, spi.Limits{WallClock: time.Second, MemoryBytes: 16 << 20})
	require.NoError(t, err)
	assert.Equal(t, int64(2), compiles.Load())
	assert.Equal(t, 2, b.modules.len())
}

func TestModuleCacheIsBounded(t *testing.T) {
	b := newTestBackend(t, &Options{ModuleCacheSize: 2})
	compiles := countCompiles(b)
	echo := fixture(t, "echo")
	run := func(mib int64) {
		t.Helper()
		got, err := eval(t, b, echo, `{}`, spi.Limits{WallClock: time.Second, MemoryBytes: mib << 20})
		require.NoError(t, err)
		require.Equal(t, spi.KindOK, got.Kind)
	}
	for _, mib := range []int64{8, 9, 10, 11} {
		run(mib)
	}
	assert.Equal(t, 2, b.modules.len())
	b.modules.mu.Lock()
	live := b.modules.live
	b.modules.mu.Unlock()
	assert.Equal(t, 2, live, "evicted modules are closed")
	assert.Equal(t, int64(4), compiles.Load())

	// Least recently used goes first: 11 was used last, 10 before it; use
	// 10 again, add 12, and 11 must be the one recompiled.
	run(10)
	run(12)
	assert.Equal(t, int64(5), compiles.Load())
	run(10)
	assert.Equal(t, int64(5), compiles.Load(), "10 was evicted although it was used more recently than 11")
	run(11)
	assert.Equal(t, int64(6), compiles.Load())
}

// TestModuleCacheEvictsInUseSafely: a module evicted while a run uses it is
// closed only when that run is over.
func TestModuleCacheEvictsInUseSafely(t *testing.T) {
	b := newTestBackend(t, &Options{ModuleCacheSize: 1})
	started := make(chan struct{})
	var once sync.Once
	b.afterInstantiate = func() { once.Do(func() { close(started) }) }
	done := make(chan spi.Outcome, 1)
	go func() {
		got, err := eval(t, b, fixture(t, "runaway_loop"), `{}`, spi.Limits{WallClock: 300 * time.Millisecond, MemoryBytes: 32 << 20})
		assert.NoError(t, err)
		done <- got
	}()
	<-started
	got, err := eval(t, b, fixture(t, "echo"), `{}`, testLimits) // evicts runaway_loop
	require.NoError(t, err)
	assert.Equal(t, spi.KindOK, got.Kind)
	var loop spi.Outcome
	watchdog(t, 30*time.Second, func() { loop = <-done })
	assert.Equal(t, spi.Limited(spi.LimitWallClock), loop)
	assert.Equal(t, 1, b.modules.len())
}

func TestModuleCacheConcurrentMixedRuns(t *testing.T) {
	b := newTestBackend(t, &Options{ModuleCacheSize: 2})
	scripts := []struct {
		name  string
		input string
		check func(t *testing.T, o spi.Outcome)
	}{
		{"echo", `{"k":"v"}`, func(t *testing.T, o spi.Outcome) { assert.Equal(t, `{"k":"v"}`, string(o.Value)) }},
		{"fresh_per_run", `{}`, func(t *testing.T, o spi.Outcome) { assert.Equal(t, `{"runs":1}`, string(o.Value)) }},
		{"throw", `{"message":"m"}`, func(t *testing.T, o spi.Outcome) { assert.Equal(t, "m", o.Message) }},
		{"no_escape", `{}`, func(t *testing.T, o spi.Outcome) { assert.Equal(t, `{"found":[],"clock":null}`, string(o.Value)) }},
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 12 {
				s := scripts[(g+i)%len(scripts)]
				got, err := eval(t, b, fixture(t, s.name), s.input, testLimits)
				if assert.NoError(t, err, s.name) {
					s.check(t, got)
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, b.modules.len(), 2)
}

// The cache on its own, with a fake compile step.

func fakeKey(i int) moduleKey { return moduleKey{sum: sha256.Sum256([]byte(fmt.Sprint(i))), pages: 1} }

func TestModuleCacheDoesNotCacheInfrastructureFailures(t *testing.T) {
	var calls atomic.Int64
	c := newModuleCache(4, func(moduleKey, []byte) (compiled, error) {
		if calls.Add(1) == 1 {
			return compiled{}, errors.New("extism: disk on fire")
		}
		o := spi.Threw(NameCompileError, "x")
		return compiled{outcome: &o}, nil
	}, nil)
	_, err := c.acquire(context.Background(), fakeKey(1), nil)
	require.EqualError(t, err, "extism: disk on fire")
	assert.Equal(t, 0, c.len())
	e, err := c.acquire(context.Background(), fakeKey(1), nil)
	require.NoError(t, err)
	assert.Equal(t, NameCompileError, e.val.outcome.Name)
	c.release(e)
	// A fixed outcome is cached.
	e, err = c.acquire(context.Background(), fakeKey(1), nil)
	require.NoError(t, err)
	c.release(e)
	assert.Equal(t, int64(2), calls.Load())
}

func TestModuleCacheWaiterHonoursContext(t *testing.T) {
	release := make(chan struct{})
	c := newModuleCache(4, func(moduleKey, []byte) (compiled, error) {
		<-release
		return compiled{}, nil
	}, nil)
	go func() {
		e, err := c.acquire(context.Background(), fakeKey(1), nil)
		if assert.NoError(t, err) {
			c.release(e)
		}
	}()
	require.Eventually(t, func() bool { return c.len() == 1 }, 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.acquire(ctx, fakeKey(1), nil)
	assert.ErrorIs(t, err, context.Canceled)
	close(release)
}

func TestModuleCacheCloseWaitsForRuns(t *testing.T) {
	var emptied atomic.Bool
	c := newModuleCache(4, func(moduleKey, []byte) (compiled, error) { return compiled{}, nil }, func() { emptied.Store(true) })
	held, err := c.acquire(context.Background(), fakeKey(1), nil)
	require.NoError(t, err)
	other, err := c.acquire(context.Background(), fakeKey(2), nil)
	require.NoError(t, err)
	c.release(other)
	c.close()
	assert.False(t, emptied.Load(), "released while a run still held an entry")
	_, err = c.acquire(context.Background(), fakeKey(3), nil)
	assert.ErrorIs(t, err, errClosed)
	c.release(held)
	assert.True(t, emptied.Load())
}
