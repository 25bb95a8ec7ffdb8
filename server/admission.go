package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// admission is the server's global cap on runs in flight, with a bounded
// queue in front of it: a run waits for a slot at most queueTimeout, and
// when maxQueue runs already wait, a new one is refused at once. So the
// goroutines and memory held by waiting requests are bounded by the queue
// (each request's body is bounded too), and a caller past the queue hears
// so quickly instead of timing out.
type admission struct {
	slots        chan struct{}
	maxQueue     int64
	queueTimeout time.Duration
	waiting      atomic.Int64
	onDepth      func(int64) // queue depth gauge
}

var (
	errQueueFull    = errors.New("server: run queue full")
	errQueueTimeout = errors.New("server: run queue wait ran out")
)

func newAdmission(maxRuns, maxQueue int, queueTimeout time.Duration, onDepth func(int64)) *admission {
	return &admission{slots: make(chan struct{}, maxRuns), maxQueue: int64(maxQueue),
		queueTimeout: queueTimeout, onDepth: onDepth}
}

// acquire takes a run slot, waiting in the queue when none is free. It
// returns the function that gives the slot back, errQueueFull,
// errQueueTimeout, or ctx's error.
func (a *admission) acquire(ctx context.Context) (func(), error) {
	select {
	case a.slots <- struct{}{}:
		return a.release, nil
	default:
	}
	if n := a.waiting.Add(1); n > a.maxQueue {
		a.waiting.Add(-1)
		return nil, errQueueFull
	}
	a.onDepth(a.waiting.Load())
	defer func() { a.onDepth(a.waiting.Add(-1)) }()
	t := time.NewTimer(a.queueTimeout)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return a.release, nil
	case <-t.C:
		return nil, errQueueTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *admission) release() { <-a.slots }

// inFlight returns the runs holding a slot.
func (a *admission) inFlight() int { return len(a.slots) }
