package run

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// fakeRuntime is a Runtime whose run is a function of the test.
type fakeRuntime struct {
	run       func(ctx context.Context, r *Run) (string, error)
	concluded int
}

func (f *fakeRuntime) Module(context.Context) (int, error) { return 1, nil }

func (f *fakeRuntime) Run(ctx context.Context, r *Run, _ int, _ spi.Request) (string, error) {
	return f.run(ctx, r)
}

func (f *fakeRuntime) Conclude(_ *Run, facts string, _ spi.Request) (spi.Outcome, error) {
	f.concluded++
	return spi.OK([]byte(facts)), nil
}

var testBounds = Bounds{DefaultWallClock: time.Hour, DefaultMemoryBytes: 1 << 20, MaxMemoryBytes: 2 << 20}

func newTestEngine(t *testing.T, cold time.Duration, run func(ctx context.Context, r *Run) (string, error)) (*Engine[int, string], *fakeRuntime) {
	t.Helper()
	rt := &fakeRuntime{run: run}
	e := New("fake", testBounds, ColdStart{Base: cold}, Runtime[int, string](rt))
	t.Cleanup(func() { _ = e.Close(nil) })
	return e, rt
}

// startScript makes the run's stdout and writes the start record to it,
// as a guest does when its script starts.
func startScript(t *testing.T, r *Run) (*wasmguest.Stdout, wasmguest.Nonce) {
	n, err := wasmguest.NewNonce()
	require.NoError(t, err)
	out := r.NewStdout(n, 1<<20)
	require.NoError(t, wasmguest.WriteRecord(out, n, wasmguest.RecStart, nil))
	return out, n
}

func TestNormalise(t *testing.T) {
	l, err := testBounds.normalise("fake", spi.Limits{})
	require.NoError(t, err)
	assert.Equal(t, spi.Limits{WallClock: time.Hour, MemoryBytes: 1 << 20}, l)
	l, err = testBounds.normalise("fake", spi.Limits{MemoryBytes: 8 << 20})
	require.NoError(t, err)
	assert.Equal(t, int64(2<<20), l.MemoryBytes)
	_, err = testBounds.normalise("fake", spi.Limits{WallClock: -1})
	assert.EqualError(t, err, "fake: negative wall clock")
	_, err = testBounds.normalise("fake", spi.Limits{MemoryBytes: -1})
	assert.EqualError(t, err, "fake: negative memory limit")
}

func TestColdStartGrowsWithTheInput(t *testing.T) {
	c := ColdStart{Base: time.Second, PerMiB: 2 * time.Second}
	assert.Equal(t, time.Second, c.For(0))
	assert.Equal(t, 17*time.Second, c.For(8<<20))
}

// TestStartupError: a start-up that overruns the cold-start allowance
// ends the run with a StartupError naming the backend and the phase (the
// first start-up phase, instantiate, never the compile, which the
// allowance does not cover).
func TestStartupError(t *testing.T) {
	e, rt := newTestEngine(t, time.Nanosecond, func(ctx context.Context, r *Run) (string, error) {
		<-ctx.Done()
		return "", errors.New("fake: stopped")
	})
	_, err := e.Evaluate(context.Background(), spi.Request{})
	var se *StartupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "fake", se.Backend)
	assert.Equal(t, PhaseInstantiate, se.Phase)
	assert.Equal(t, `fake: start-up phase "instantiate" exceeded the cold-start allowance of 1ns`, se.Error())
	se.Backend = ""
	assert.Equal(t, `start-up phase "instantiate" exceeded the cold-start allowance of 1ns`, se.Error())
	assert.Zero(t, rt.concluded)
}

// TestWallClockSealsStdout: the start record arms the script's wall
// clock; when it runs out the stdout is sealed (a result written later is
// never read) and the runtime still concludes.
func TestWallClockSealsStdout(t *testing.T) {
	var record wasmguest.Record
	var expired bool
	e, rt := newTestEngine(t, time.Hour, func(ctx context.Context, r *Run) (string, error) {
		out, n := startScript(t, r)
		<-ctx.Done()
		require.NoError(t, wasmguest.WriteRecord(out, n, wasmguest.RecResult, []byte("1")))
		record, expired = out.Record(), r.WallClockExpired()
		return "after", nil
	})
	out, err := e.Evaluate(context.Background(), spi.Request{Limits: spi.Limits{WallClock: time.Nanosecond}})
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("after")), out)
	assert.Equal(t, 1, rt.concluded)
	assert.True(t, expired)
	assert.False(t, record.Settled())
}

// TestStartStopsTheAllowance: once the script started, the cold-start
// allowance no longer runs and the phase is the script's.
func TestStartStopsTheAllowance(t *testing.T) {
	var phase string
	var startup bool
	e, _ := newTestEngine(t, time.Hour, func(ctx context.Context, r *Run) (string, error) {
		started := false
		r.OnStart(func() { started = true })
		_, _ = startScript(t, r)
		phase = r.Phase()
		_, _, startup = r.Stats()
		if !started {
			return "", errors.New("OnStart not called")
		}
		return "ok", nil
	})
	out, err := e.Evaluate(context.Background(), spi.Request{})
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("ok")), out)
	assert.Equal(t, PhaseScript, phase)
	assert.True(t, startup)
}

// TestCloseDecidesAConcludingRun: a run that Close stopped is ErrClosed
// even when it concludes before its own context was cancelled (Close
// cancels that context from a goroutine of its own), whether the runtime
// returned facts or an error.
func TestCloseDecidesAConcludingRun(t *testing.T) {
	for name, fail := range map[string]bool{"facts": false, "error": true} {
		t.Run(name, func(t *testing.T) {
			var e *Engine[int, string]
			e, rt := newTestEngine(t, time.Hour, func(ctx context.Context, r *Run) (string, error) {
				e.shutdown() // what Close does first
				if fail {
					return "", errors.New("fake: boot failed")
				}
				return "killed", nil
			})
			_, err := e.Evaluate(context.Background(), spi.Request{})
			assert.ErrorIs(t, err, ErrClosed)
			assert.EqualError(t, err, "fake: backend closed")
			assert.Zero(t, rt.concluded)
		})
	}
}

// TestClosed: after Close, Evaluate and Warm fail with ErrClosed; Close
// waits for a run in flight, stops it, and releases once.
func TestClosed(t *testing.T) {
	entered := make(chan struct{})
	e, _ := newTestEngine(t, time.Hour, func(ctx context.Context, r *Run) (string, error) {
		close(entered)
		<-ctx.Done()
		return "", context.Cause(ctx)
	})
	done := make(chan error, 1)
	go func() {
		_, err := e.Evaluate(context.Background(), spi.Request{})
		done <- err
	}()
	<-entered
	released := 0
	require.NoError(t, e.Close(func() error { released++; return nil }))
	assert.ErrorIs(t, <-done, ErrClosed)
	require.NoError(t, e.Close(func() error { released++; return nil }))
	assert.Equal(t, 1, released)
	_, err := e.Evaluate(context.Background(), spi.Request{})
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, e.Warm(context.Background(), func(context.Context) error { return nil }), ErrClosed)
}

// TestCallerCancellationWins: the caller's cancellation is returned as
// is, never a limit or the runtime's conclusion.
func TestCallerCancellationWins(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e, rt := newTestEngine(t, time.Hour, func(context.Context, *Run) (string, error) {
		cancel()
		return "late", nil
	})
	_, err := e.Evaluate(ctx, spi.Request{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, rt.concluded)
}
