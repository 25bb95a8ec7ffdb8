package goja_test

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sandbank/sandbank/spi"
)

// runCreator is how a goroutine started by the backend names its creator
// in a stack dump. Go prints the "created by" line of every goroutine, and
// the outermost frames of one too deep to print whole, so a run is found
// however deep its stack is.
const runCreator = "created by github.com/sandbank/sandbank/backends/goja."

// leakWait is how long a stopped run may take to unwind: a run stopped in
// the middle of a long built-in finishes it first (the wall clock is
// soft). The tests' built-ins take well under a second alone; the margin
// is for a loaded machine and the race detector.
const leakWait = 60 * time.Second

// liveRuns counts the goroutines the backend started that are still
// running, from a dump of every goroutine's stack.
func liveRuns() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte(runCreator))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// awaitRuns waits until no goroutine of the backend is running, for at
// most leakWait, and returns how many still are.
func awaitRuns() int {
	deadline := time.Now().Add(leakWait)
	for {
		n := liveRuns()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loggedLoop logs a line, then loops until it is stopped: the line says
// that the run is in its loop.
const loggedLoop = `console.log("looping"); for (;;) {}`

// firstLine is a log sink that closes c at the script's first line.
type firstLine struct {
	once sync.Once
	c    chan struct{}
}

func newFirstLine() *firstLine { return &firstLine{c: make(chan struct{})} }

func (f *firstLine) Log(spi.LogLevel, spi.LogStream, string) bool {
	f.once.Do(func() { close(f.c) })
	return true
}

// noLeak fails the test when a goroutine started during it is still
// running at its end: a run that was told to stop must really stop.
//
// It checks twice. First the backend's own goroutines, found by their
// creator: they must all end (within leakWait). Then goleak, for any other
// goroutine. goleak v1.3.0 panics on the "...N frames elided..." line Go
// prints for a stack deeper than 100 frames, and a run stopped inside a
// deep built-in (goja recurses on the Go stack) has such a stack while it
// unwinds; waiting for the runs to end first means goleak never reads
// one, here or at the next test's start.
func noLeak(t *testing.T) {
	t.Helper()
	if n := awaitRuns(); n > 0 {
		t.Fatalf("%d runs of an earlier test are still running after %v", n, leakWait)
	}
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if n := awaitRuns(); n > 0 {
			t.Errorf("%d runs are still running %v after the test ended", n, leakWait)
			return // goleak could not read their stacks
		}
		goleak.VerifyNone(t, opt)
	})
}

// TestLiveRunsSeesARun: the leak check finds a running run, so it can
// fail. A run stopped by its context ends; until then it is counted.
func TestLiveRunsSeesARun(t *testing.T) {
	noLeak(t)
	b := newBackend(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	running := newFirstLine()
	go func() {
		defer close(done)
		_, _ = b.Evaluate(ctx, spi.Request{Script: []byte(loggedLoop), Input: []byte("null"), Logs: running})
	}()
	<-running.c // the script is in its loop
	require.Positive(t, liveRuns(), "the run does not show in the stack dump")
	cancel()
	<-done
	assert.Zero(t, awaitRuns())
}
