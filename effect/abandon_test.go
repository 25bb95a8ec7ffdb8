package effect

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// waitAbandoned waits (bounded by the watchdog) until Abandoned is n: a
// late return frees its slot just after the backend's goroutine returns.
func waitAbandoned(t *testing.T, e *Effect, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return e.Abandoned() == n }, watchdog, time.Millisecond,
		"Abandoned() = %d, want %d", e.Abandoned(), n)
}

func TestAbandonedCallsAreCapped(t *testing.T) {
	release := make(chan struct{})
	zero := time.Duration(0)
	f := newFixture(t, fakebackend.BlockUntil(release, okOutcome(`1`)), &Options{
		MaxAbandoned: 2,
		BackendGrace: &zero,
		Limits:       spi.Limits{WallClock: time.Millisecond},
	})
	// Two calls lose to the deadline (the backend ignores its context);
	// one is abandoned by the caller's cancellation.
	_, err := f.callWithin(t, context.Background(), 1)
	requireUntyped(t, err)
	assert.Contains(t, err.Error(), "did not settle")
	assert.Equal(t, 1, f.e.Abandoned())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitCalls(t, f.fb, 2)
		cancel()
	}()
	_, err = f.callWithin(t, ctx, 1)
	assert.Equal(t, context.Canceled, err)
	assert.Equal(t, 2, f.e.Abandoned())

	// Past the cap: refused, retryable, the backend untouched.
	_, err = f.callWithin(t, context.Background(), 1)
	requireUntyped(t, err)
	assert.ErrorIs(t, err, ErrOverloaded)
	assert.EqualError(t, err, "effect: overloaded (too many abandoned backend calls have not returned)")
	assert.Equal(t, 2, f.fb.Calls(), "a refused call does not reach the backend")

	// Late returns free their slots.
	close(release)
	waitReturned(t, f.fb, 2)
	waitAbandoned(t, f.e, 0)
	out, err := f.callWithin(t, context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, "1", string(out))
	assert.Equal(t, 0, f.e.Abandoned(), "a call that returned in time is not abandoned")
}

func TestAbandonedDefault(t *testing.T) {
	f := newFixture(t, nil, nil)
	assert.Equal(t, defaultMaxAbandoned, f.e.maxAbandoned)
	assert.Equal(t, defaultCloseTimeout, f.e.closeTimeout)
	assert.Equal(t, defaultWarmTimeout, f.e.warmTimeout)
	assert.Zero(t, f.e.Abandoned())
}

// blockingCloser is a backend whose Close blocks until release, ignoring
// everything else.
type blockingCloser struct {
	*fakebackend.Backend
	release chan struct{}
}

func (b blockingCloser) Close() error {
	<-b.release
	return b.Backend.Close()
}

func TestCloseIsBounded(t *testing.T) {
	fb := fakebackend.New(fakebackend.Capabilities(), nil)
	b := blockingCloser{Backend: fb, release: make(chan struct{})}
	e, err := New(newMemoryStore(), b, &Options{CloseTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- e.Close() }()
	select {
	case err = <-done:
	case <-time.After(watchdog):
		t.Fatal("Close waited on the backend's Close without a bound")
	}
	requireUntyped(t, err)
	assert.EqualError(t, err, "effect: closing backend did not finish within 20ms")
	assert.Equal(t, 1, e.Abandoned())
	assert.Equal(t, err, e.Close(), "a second Close returns the first one's result")
	_, cerr := e.Evaluate(context.Background(), Call{Source: testScript})
	requireInvalid(t, cerr, ErrClosed)

	close(b.release)
	waitAbandoned(t, e, 0)
	assert.Equal(t, 1, fb.Counts().Closes)
}

func TestWarmIsBounded(t *testing.T) {
	t.Run("backend ignores its context", func(t *testing.T) {
		release := make(chan struct{})
		fb := fakebackend.New(fakebackend.Capabilities(), nil)
		w := warmer{Backend: fb, warm: func(context.Context) error { <-release; return nil }}
		e, err := New(newMemoryStore(), w, &Options{WarmTimeout: 20 * time.Millisecond})
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- e.Warm(context.Background()) }()
		select {
		case err = <-done:
		case <-time.After(watchdog):
			t.Fatal("Warm has no deadline of its own")
		}
		requireUntyped(t, err)
		assert.EqualError(t, err, "effect: backend warm-up did not finish within 20ms")
		assert.Equal(t, 1, e.Abandoned())
		close(release)
		waitAbandoned(t, e, 0)
	})
	t.Run("backend honours its context", func(t *testing.T) {
		fb := fakebackend.New(fakebackend.Capabilities(), nil)
		var deadline atomic.Bool
		w := warmer{Backend: fb, warm: func(ctx context.Context) error {
			_, ok := ctx.Deadline()
			deadline.Store(ok)
			<-ctx.Done()
			return ctx.Err()
		}}
		e, err := New(newMemoryStore(), w, &Options{WarmTimeout: 20 * time.Millisecond})
		require.NoError(t, err)
		err = e.Warm(context.Background())
		requireUntyped(t, err)
		assert.EqualError(t, err, "effect: backend warm-up did not finish within 20ms")
		assert.True(t, deadline.Load(), "the backend's Warm sees the deadline")
		// It may have counted as abandoned for a moment (the deadline and
		// its return race); once it returned, its slot is free.
		waitAbandoned(t, e, 0)
	})
	t.Run("refused when overloaded", func(t *testing.T) {
		release := make(chan struct{})
		zero := time.Duration(0)
		fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.BlockUntil(release, okOutcome(`1`)))
		w := warmer{Backend: fb, warm: func(context.Context) error { return nil }}
		e, err := New(newMemoryStore(), w, &Options{MaxAbandoned: 1, BackendGrace: &zero, Limits: spi.Limits{WallClock: time.Millisecond}})
		require.NoError(t, err)
		_, err = e.Evaluate(context.Background(), Call{Source: testScript})
		requireUntyped(t, err)
		err = e.Warm(context.Background())
		assert.ErrorIs(t, err, ErrOverloaded)
		assert.True(t, Retryable(err))
		close(release)
		waitAbandoned(t, e, 0)
		require.NoError(t, e.Warm(context.Background()))
	})
}

func TestAbandonedReadsAreCounted(t *testing.T) {
	release := make(chan struct{})
	reader := readerFunc(func(context.Context, record.Address) ([]byte, error) {
		<-release // ignores its context
		return testScript, nil
	})
	fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
	e, err := New(reader, fb, &Options{MaxAbandoned: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	call := Call{Script: record.AddressOf(testScript), Input: 1}
	// A context cancelled before the call never starts a read.
	_, err = e.Evaluate(ctx, call)
	require.Equal(t, context.Canceled, err)
	assert.Zero(t, e.Abandoned())

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = e.Evaluate(ctx, call)
	require.Equal(t, context.DeadlineExceeded, err)
	assert.Equal(t, 1, e.Abandoned())
	_, err = e.Evaluate(context.Background(), call)
	assert.ErrorIs(t, err, ErrOverloaded)
	assert.Zero(t, fb.Calls())

	close(release)
	waitAbandoned(t, e, 0)
	_, err = e.Evaluate(context.Background(), call)
	require.NoError(t, err)
}
