package effect

import (
	"context"
	"sync"
	"time"
)

// This file bounds what a backend that never returns can cost: the
// goroutines the effect leaves behind (one per abandoned call) are counted
// and capped, and Warm and Close have deadlines of their own.

// errOverloaded refuses a call while MaxAbandoned calls are outstanding.
var errOverloaded = &untypedError{
	msg:   "effect: overloaded (too many abandoned backend calls have not returned)",
	cause: ErrOverloaded,
}

// Abandoned returns how many calls the effect stopped waiting for (a
// backend's Evaluate, Warm or Close, or a script reader's ReadScript) that
// have not returned yet. A run whose host function is still running counts
// as one of them until the function returns, even when Evaluate returned.
func (e *Effect) Abandoned() int { return int(e.abandoned.Load()) }

// overloaded reports whether new backend work must be refused.
func (e *Effect) overloaded() bool { return e.abandoned.Load() >= int64(e.maxAbandoned) }

// job is one backend call running in its own goroutine, with whatever the
// call left running that the effect must still count: a host function of
// the run (hostcall.go) that some goroutine of the backend is still inside.
// The goroutines still inside the call hold it (the backend's goroutine
// from the start, each host function while it runs); once the effect
// stops waiting (abandon), the call counts as abandoned while any hold is
// left, and frees its slot when the last hold is released. So a host
// function that ignores its context counts until it returns, whether the
// backend's Evaluate is stuck with it or returned and left it behind on a
// goroutine of its own, and it counts once per run, not once per goroutine.
type job struct {
	e       *Effect
	mu      sync.Mutex
	holds   int  // goroutines still inside the call
	left    bool // the effect stopped waiting
	counted bool // the call counts in e.abandoned
}

func (e *Effect) newJob() *job { return &job{e: e, holds: 1} }

// abandon is called when the effect stops waiting for the call.
func (j *job) abandon() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.left = true
	if j.holds > 0 && !j.counted {
		j.counted = true
		j.e.abandoned.Add(1)
	}
}

// hold is called when one more goroutine enters the call (a host function
// starts); the caller knows the call is still held.
func (j *job) hold() {
	j.mu.Lock()
	j.holds++
	j.mu.Unlock()
}

// finish releases a hold: the backend's goroutine returned (or panicked),
// or a host function returned. The last one frees a counted call's slot.
func (j *job) finish() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.holds--
	if j.holds == 0 && j.counted {
		j.counted = false
		j.e.abandoned.Add(-1) // a late return frees its slot
	}
}

// runBounded runs fn in its own goroutine, counted as a job, and waits for
// it until ctx is done or d passes (d <= 0: no deadline of its own). It
// reports whether fn returned in time; fn's panic is recovered into
// errBackendPanicked.
func (e *Effect) runBounded(ctx context.Context, d time.Duration, fn func() error) (err error, returned bool) {
	j := e.newJob()
	ch := make(chan error, 1)
	go func() {
		defer j.finish()
		defer func() {
			if r := recover(); r != nil {
				ch <- errBackendPanicked
			}
		}()
		ch <- fn()
	}()
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case err := <-ch:
		return err, true
	case <-ctx.Done():
	case <-timeout:
	}
	j.abandon()
	return nil, false
}
