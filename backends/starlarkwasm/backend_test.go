package starlarkwasm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/spi"
)

func TestNewRefusesNegativeOptions(t *testing.T) {
	for _, o := range []*starlarkwasm.Options{{MaxSteps: -1}, {MaxResultBytes: -1}, {ColdStartAllowance: -time.Second}} {
		_, err := starlarkwasm.New(o)
		assert.Error(t, err)
	}
}

func TestCapabilities(t *testing.T) {
	b, err := starlarkwasm.New(nil)
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, spi.Capabilities{Language: "starlark", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, CPU: true, FreshPerRun: true, HostCalls: true, Logs: true, Files: true}, b.Capabilities())
}

func TestNegativeLimitsAreRefused(t *testing.T) {
	b, err := starlarkwasm.New(nil)
	require.NoError(t, err)
	defer b.Close()
	for _, l := range []spi.Limits{{WallClock: -1}, {MemoryBytes: -1}} {
		_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return 1"), Input: []byte(`1`), Limits: l})
		assert.Error(t, err)
	}
}

// TestClosed: after Close, Evaluate and Warm fail with ErrClosed, and a
// second Close is a no-op.
func TestClosed(t *testing.T) {
	b, err := starlarkwasm.New(nil)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	_, err = b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return 1"), Input: []byte(`1`)})
	assert.True(t, errors.Is(err, starlarkwasm.ErrClosed), err)
	assert.True(t, errors.Is(b.Warm(context.Background()), starlarkwasm.ErrClosed))
}

// TestMemoryBelowBoot: a limit below what the Go runtime needs to start
// is the memory limit, not an untyped error.
func TestMemoryBelowBoot(t *testing.T) {
	b, err := starlarkwasm.New(nil)
	require.NoError(t, err)
	defer b.Close()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return 1"), Input: []byte(`1`), Limits: spi.Limits{MemoryBytes: 1 << 20}})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitMemory), out)
}

// TestCloseStopsARun: Close stops a run in flight (a loop that would run
// for its whole 30 s clock) and the run ends untyped, not as the script's
// outcome.
func TestCloseStopsARun(t *testing.T) {
	b, err := starlarkwasm.New(&starlarkwasm.Options{MaxSteps: 1 << 40})
	require.NoError(t, err)
	require.NoError(t, b.Warm(context.Background()))
	done := make(chan error, 1)
	looping := firstLine{seen: make(chan struct{})}
	go func() {
		_, err := b.Evaluate(context.Background(), spi.Request{
			Script: []byte("def main(input):\n    print('looping')\n    for i in range(1 << 62):\n        pass"),
			Input:  []byte(`1`), Limits: spi.Limits{WallClock: 30 * time.Second}, Logs: &looping,
		})
		done <- err
	}()
	select {
	case <-looping.seen: // the script is in its loop
	case err := <-done:
		t.Fatalf("the run ended before its loop: %v", err)
	}
	start := time.Now()
	require.NoError(t, b.Close())
	select {
	case err := <-done:
		assert.True(t, errors.Is(err, starlarkwasm.ErrClosed), err)
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not return within 10 s of Close")
	}
	t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
}

// firstLine is a log sink that closes seen at the first line it gets.
type firstLine struct {
	once sync.Once
	seen chan struct{}
}

func (f *firstLine) Log(spi.LogLevel, spi.LogStream, string) bool {
	f.once.Do(func() { close(f.seen) })
	return true
}
