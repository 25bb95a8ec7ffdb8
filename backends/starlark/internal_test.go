package starlark

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sl "go.starlark.net/starlark"

	"github.com/sandbank/sandbank/spi"
)

// blockingBackend is a backend whose scripts can call block(), a built-in
// that stands for one long native operation: it returns only when release
// is closed. It tells started when it is entered and finished when it
// returns.
func blockingBackend(t *testing.T) (b *Backend, started, release, finished chan struct{}) {
	t.Helper()
	sb, err := New(nil)
	require.NoError(t, err)
	b = sb
	started, release, finished = make(chan struct{}), make(chan struct{}), make(chan struct{})
	b.predeclared = sl.StringDict{
		"block": sl.NewBuiltin("block", func(*sl.Thread, *sl.Builtin, sl.Tuple, []sl.Tuple) (sl.Value, error) {
			close(started)
			<-release
			close(finished)
			return sl.None, nil
		}),
	}
	return b, started, release, finished
}

const blockScript = "def main(input):\n    block()\n    return 1\n"

// TestCancelReturnsDuringALongBuiltin: Evaluate returns the context's error
// while one built-in call is still running; the call finishes later and
// the run then stops at its next step.
func TestCancelReturnsDuringALongBuiltin(t *testing.T) {
	b, started, release, finished := blockingBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	out, err := b.Evaluate(ctx, spi.Request{Script: []byte(blockScript), Input: json.RawMessage(`null`), Limits: spi.Limits{WallClock: time.Hour}})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, spi.Outcome{}, out)
	select {
	case <-finished:
		t.Fatal("the built-in finished before Evaluate returned")
	default:
	}
	close(release)
	<-finished
}

// TestWallClockReturnsDuringALongBuiltin: Evaluate reports the wall-clock
// limit at the deadline while one built-in call is still running.
func TestWallClockReturnsDuringALongBuiltin(t *testing.T) {
	b, _, release, finished := blockingBackend(t)
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(blockScript), Input: json.RawMessage(`null`), Limits: spi.Limits{WallClock: time.Millisecond}})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
	select {
	case <-finished:
		t.Fatal("the built-in finished before Evaluate returned")
	default:
	}
	close(release)
	<-finished
}

// TestPanicIsThrown: a panic inside the interpreter (here a built-in) is
// recovered on the run's goroutine and reported, not a crash, as the
// script's failure: a thrown InternalError (a typed, final scriptError),
// never retryable infrastructure, since it fails the same way every time.
func TestPanicIsThrown(t *testing.T) {
	sb, err := New(nil)
	require.NoError(t, err)
	b := sb
	b.predeclared = sl.StringDict{
		"boom": sl.NewBuiltin("boom", func(*sl.Thread, *sl.Builtin, sl.Tuple, []sl.Tuple) (sl.Value, error) {
			panic("boom")
		}),
	}
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return boom()\n"), Input: json.RawMessage(`null`), Limits: spi.Limits{WallClock: time.Minute}})
	require.NoError(t, err)
	assert.Equal(t, spi.Threw("InternalError", msgInterpreterFailed), out)
}

// TestLoadHookRefuses: the thread's load hook refuses too, should a load
// ever get past the compile-time check.
func TestLoadHookRefuses(t *testing.T) {
	_, prog, err := sl.SourceProgramOptions(fileOptions, scriptName, "load(\"x.star\", \"y\")\n", sl.StringDict{}.Has)
	require.NoError(t, err)
	r := &run{b: &Backend{maxSteps: 1000, maxResult: 1 << 20}, prog: prog, input: sl.None}
	r.thread = newThread(r)
	out := r.exec()
	assert.Equal(t, spi.KindThrew, out.Kind)
	assert.Contains(t, out.Message, "load is not available")
}

// TestLateValueIsTheWallClockLimit: a run that finished after its wall
// clock never delivers its value, even when the timer did not fire first
// (here it never fires, as on a machine too busy to run it in time).
func TestLateValueIsTheWallClockLimit(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	// The built-in outlasts the wall clock: its sleep is the slow run this
	// test is about, not a wait for something else to happen.
	const wall = time.Millisecond
	b.predeclared = sl.StringDict{
		"block": sl.NewBuiltin("block", func(*sl.Thread, *sl.Builtin, sl.Tuple, []sl.Tuple) (sl.Value, error) {
			time.Sleep(5 * wall)
			return sl.None, nil
		}),
	}
	b.timer = func(time.Duration) (<-chan time.Time, func() bool) { return nil, func() bool { return true } }
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(blockScript), Input: json.RawMessage(`null`), Limits: spi.Limits{WallClock: wall}})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)

	// A run inside its clock still delivers its value.
	b2, _, release2, _ := blockingBackend(t)
	b2.timer = b.timer
	close(release2)
	out, err = b2.Evaluate(context.Background(), spi.Request{Script: []byte(blockScript), Input: json.RawMessage(`null`), Limits: spi.Limits{WallClock: time.Hour}})
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage(`1`)), out)
}

// TestLateValueAfterTheTimerFiredIsTheWallClockLimit: the timer fires after
// the run has ended but before Evaluate has its value (as when one huge
// allocation stopped the world past the deadline, issue 14): the value is
// late and is never delivered. The unbuffered timer channel makes the
// order certain: afterRun's send completes only when Evaluate's select has
// taken the timer branch.
func TestLateValueAfterTheTimerFiredIsTheWallClockLimit(t *testing.T) {
	sb, err := New(nil)
	require.NoError(t, err)
	b := sb
	fire := make(chan time.Time)
	b.timer = func(time.Duration) (<-chan time.Time, func() bool) { return fire, func() bool { return true } }
	b.afterRun = func() { fire <- time.Now() }
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return 1\n"), Input: json.RawMessage(`null`), Limits: spi.Limits{WallClock: time.Nanosecond}})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)

	// A run that ended within its clock still delivers its value when the
	// timer fires before Evaluate has it.
	b.timer = func(time.Duration) (<-chan time.Time, func() bool) { return fire, func() bool { return true } }
	out, err = b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return 1\n"), Input: json.RawMessage(`null`), Limits: spi.Limits{WallClock: time.Hour}})
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage(`1`)), out)
}

// TestSuffixChainsAreRefusedBeforeTheResolver: a 16 MiB chain of calls
// overflowed the resolver's Go stack, a fatal error that ended the test
// binary, before the bound.
func TestSuffixChainsAreRefusedBeforeTheResolver(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	for name, script := range map[string]string{
		"calls":   "a = 1\nx = a" + strings.Repeat("()", 8<<20),
		"members": "a = 1\nx = a" + strings.Repeat(".a", 8<<20),
	} {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour, MemoryBytes: 1 << 30}})
		require.NoError(t, err, name)
		assert.Equal(t, spi.Threw("SyntaxError", "starlark: the script has more than 262144 brackets and operators"), out, name)
	}
}
