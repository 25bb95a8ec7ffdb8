package goja

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// stuckSink is a log sink whose Log signals entered and then blocks until
// release is closed: a native operation goja cannot interrupt, held for as
// long as the test wants.
type stuckSink struct {
	entered chan struct{}
	release chan struct{}
}

func (s stuckSink) Log(spi.LogLevel, spi.LogStream, string) bool {
	s.entered <- struct{}{}
	<-s.release
	return true
}

// TestLeftoversAreBounded: a run stopped at its wall clock (or cancelled)
// inside a native operation goes on after Evaluate returned, and counts
// against the backend until it ends: with MaxLeftovers of them running, a
// new run is refused at once (a retryable infrastructure outcome) rather
// than run beside them; once they end, runs are admitted again. The
// operation is a log sink that blocks until the test releases it, and the
// wall clock is a timer the test fires, so nothing here depends on time.
func TestLeftoversAreBounded(t *testing.T) {
	const max = 2
	b, err := New(&Options{MaxLeftovers: max})
	require.NoError(t, err)
	fire := make(chan time.Time)
	b.timer = func(time.Duration) (<-chan time.Time, func() bool) { return fire, func() bool { return true } }
	b.grace = func(f func()) { f() } // the grace has passed at once
	sink := stuckSink{entered: make(chan struct{}), release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(sink.release)
		}
	}
	defer release()

	stuck := spi.Request{Script: []byte(`console.log("stuck"); 1`), Input: []byte("null"), Logs: sink, Limits: spi.Limits{WallClock: time.Second}}
	type result struct {
		out spi.Outcome
		err error
	}
	for i := range max {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan result, 1)
		go func() {
			out, err := b.Evaluate(ctx, stuck)
			done <- result{out, err}
		}()
		<-sink.entered
		if i == 0 {
			fire <- time.Now() // stopped at its wall clock
			r := <-done
			require.NoError(t, r.err)
			assert.Equal(t, spi.Limited(spi.LimitWallClock), r.out)
		} else {
			cancel() // stopped by its caller
			r := <-done
			assert.ErrorIs(t, r.err, context.Canceled)
		}
		cancel()
	}

	assert.Equal(t, max, b.Leftovers())
	quick := spi.Request{Script: []byte(`1 + 1`), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}}
	out, err := b.Evaluate(context.Background(), quick)
	require.NoError(t, err)
	assert.Equal(t, spi.Infrastructure(MsgLeftovers), out, "a run is refused while MaxLeftovers stopped runs go on")

	release()
	// The leftovers end as soon as their log calls return; wait for the
	// count to fall (a condition, not a duration: the bound is only there
	// so that a broken count fails instead of hanging).
	require.Eventually(t, func() bool { return b.Leftovers() == 0 }, time.Minute, time.Millisecond)
	out, err = b.Evaluate(context.Background(), quick)
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("2")), out)
}

// TestALeftoverThatEndedFirstIsNotCounted: a run that ends on its own as
// Evaluate gives up on it is never counted as a leftover.
func TestALeftoverThatEndedFirstIsNotCounted(t *testing.T) {
	b, err := New(&Options{MaxLeftovers: 1})
	require.NoError(t, err)
	b.grace = func(f func()) { f() }
	r := &run{}
	b.ended(r)
	b.leave(r)
	assert.Zero(t, b.leftovers.Load())
	r = &run{}
	b.leave(r)
	assert.EqualValues(t, 1, b.leftovers.Load())
	b.ended(r)
	assert.Zero(t, b.leftovers.Load())
}

// TestALeftoverWithinItsGraceRefusesNone: a stopped run whose goroutine
// is still going on is a leftover at once (Leftovers, which the bench
// waits for), but refuses no run until LeftoverGrace has passed, and
// never if it ended within it (goja stops plain JavaScript at its next
// instruction: a load of runaway loops stopped at their clocks must not
// refuse the good runs beside them).
func TestALeftoverWithinItsGraceRefusesNone(t *testing.T) {
	b, err := New(&Options{MaxLeftovers: 1})
	require.NoError(t, err)
	var graced []func()
	b.grace = func(f func()) { graced = append(graced, f) }
	quick := spi.Request{Script: []byte(`1 + 1`), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}}

	r := &run{}
	b.leave(r)
	assert.Equal(t, 1, b.Leftovers())
	out, err := b.Evaluate(context.Background(), quick)
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("2")), out, "a leftover within its grace refuses no run")

	b.ended(r) // within its grace
	require.Len(t, graced, 1)
	graced[0]()
	assert.Zero(t, b.Leftovers())
	out, err = b.Evaluate(context.Background(), quick)
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("2")), out, "a leftover that ended within its grace never counts")

	r = &run{}
	b.leave(r)
	graced[1]() // past its grace, still going on
	out, err = b.Evaluate(context.Background(), quick)
	require.NoError(t, err)
	assert.Equal(t, spi.Infrastructure(MsgLeftovers), out, "a leftover past its grace refuses")
	b.ended(r)
	out, err = b.Evaluate(context.Background(), quick)
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("2")), out)
}
