package effect

import (
	"context"
	"sync/atomic"
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
// have not returned yet.
func (e *Effect) Abandoned() int { return int(e.abandoned.Load()) }

// overloaded reports whether new backend work must be refused.
func (e *Effect) overloaded() bool { return e.abandoned.Load() >= int64(e.maxAbandoned) }

// job is one backend call running in its own goroutine: whichever of
// abandon (the effect stops waiting) and finish (the goroutine returns)
// comes second decides whether the call counted as abandoned, and frees
// its slot when it did.
type job struct {
	e     *Effect
	state atomic.Int32 // jobRunning, jobFinished or jobAbandoned
}

const (
	jobRunning int32 = iota
	jobFinished
	jobAbandoned
)

func (e *Effect) newJob() *job { return &job{e: e} }

// abandon is called when the effect stops waiting for the call.
func (j *job) abandon() {
	if j.state.CompareAndSwap(jobRunning, jobAbandoned) {
		j.e.abandoned.Add(1)
	}
}

// finish is called by the goroutine when the backend returned (or
// panicked).
func (j *job) finish() {
	if !j.state.CompareAndSwap(jobRunning, jobFinished) {
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
