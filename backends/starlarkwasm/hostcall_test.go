package starlarkwasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/spi"
)

// stuckHost is a broker that ignores its context: a call never returns
// until release is closed.
type stuckHost struct {
	entered chan struct{}
	once    sync.Once
	release chan struct{}
}

func (h *stuckHost) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	h.once.Do(func() { close(h.entered) })
	<-h.release
	return json.RawMessage(`1`), nil
}

// TestHostCallStops: a run blocked in a host call whose broker never
// returns still ends at its wall clock (limitExceeded wallClock) and at
// the caller's cancellation: the guest's read of stdin must not wait for
// the broker past the run.
func TestHostCallStops(t *testing.T) {
	b, err := starlarkwasm.New(nil)
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Warm(context.Background())) // the compile is not the run's
	script := []byte("def main(input):\n    return host.probe(input)")

	h := &stuckHost{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(h.release)
	out, err := within(t, func() (spi.Outcome, error) {
		return b.Evaluate(context.Background(), spi.Request{Script: script, Input: []byte(`1`), Host: h, Limits: spi.Limits{WallClock: 300 * time.Millisecond}})
	})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
	<-h.entered

	h2 := &stuckHost{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(h2.release)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-h2.entered; cancel() }()
	_, err = within(t, func() (spi.Outcome, error) {
		return b.Evaluate(ctx, spi.Request{Script: script, Input: []byte(`1`), Host: h2, Limits: spi.Limits{WallClock: time.Minute}})
	})
	assert.True(t, errors.Is(err, context.Canceled), err)
}

// within runs eval and fails the test when it does not return within 10 s
// (a wall clock of 300 ms, or a cancellation, plus a wide margin for a
// loaded machine).
func within(t *testing.T, eval func() (spi.Outcome, error)) (spi.Outcome, error) {
	t.Helper()
	type result struct {
		out spi.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := eval()
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("the run blocked in a host call did not return within 10 s")
		return spi.Outcome{}, nil
	}
}

// recordingHost answers every call with its argument and keeps the
// order of calls and lines.
type recordingHost struct {
	mu  sync.Mutex
	got []string
}

func (h *recordingHost) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, "call "+name+" "+string(args))
	return args, nil
}

func (h *recordingHost) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, "log "+line)
	return len(h.got) < 1000
}

// TestHostCallsAndLogsInOrder: through the whole backend, the script's
// calls and lines arrive in the order it makes them, and a script that
// prints far more than the sink takes still ends with its value, its
// log lines never crowding out the result.
func TestHostCallsAndLogsInOrder(t *testing.T) {
	b, err := starlarkwasm.New(nil)
	require.NoError(t, err)
	defer b.Close()
	var h recordingHost
	script := []byte(`def main(input):
    print("a")
    x = host.echo(input)
    print("b", x)
    for i in range(20000):
        print("y" * 1000)
    return host.echo([x, 2])
`)
	out, err := b.Evaluate(context.Background(), spi.Request{Script: script, Input: []byte(`{"k":"é"}`), Host: &h, Logs: &h,
		Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20}})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, out.Message)
	assert.JSONEq(t, `[{"k":"é"},2]`, string(out.Value))
	require.GreaterOrEqual(t, len(h.got), 4)
	assert.Equal(t, []string{"log a", `call echo {"k":"é"}`, `log b {"k": "é"}`}, h.got[:3])
	assert.Equal(t, `call echo [{"k":"é"},2]`, h.got[len(h.got)-1], "the last call comes after every line the sink took")
	assert.Len(t, h.got, 1001, "the sink took 999 lines, then was full; the tap stops asking")
}
