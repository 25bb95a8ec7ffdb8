package effect

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// durableFixture is an effect over a relay that declares Deterministic,
// with host function f echoing its argument and counting its calls.
func durableFixture(t *testing.T) (*Effect, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	r := newRelay()
	r.deterministic = true
	e, err := New(newMemoryStore(), r, &Options{Host: HostFuncs{"f": func(_ context.Context, args json.RawMessage) (any, error) {
		calls.Add(1)
		return args, nil
	}}})
	require.NoError(t, err)
	return e, &calls
}

func durableCall(input json.RawMessage, replay ...HostCall) Call {
	return Call{Source: hostScript, Input: input, Durable: &Durable{Replay: replay, MaxSuspensions: 2, MaxLogBytes: 1 << 10}}
}

// TestReplayAnswersFromTheLog: logged answers and errors are given back
// without calling the host function, a logged call without an answer
// runs live, and the record keeps every call's arguments and answer.
func TestReplayAnswersFromTheLog(t *testing.T) {
	e, calls := durableFixture(t)
	in := relayInput(false, relayCall{"f", json.RawMessage(`{"b":1,"a":2}`)}, relayCall{"f", json.RawMessage(`2`)}, relayCall{"f", json.RawMessage(`3`)}, relayCall{"f", json.RawMessage(`4`)})
	rec, err := e.Run(context.Background(), durableCall(in,
		HostCall{Name: "f", Args: json.RawMessage(`{"a":2,"b":1}`), Outcome: HostCallOK, Answer: json.RawMessage(`"logged"`)},
		HostCall{Name: "f", Args: json.RawMessage(`2`), Outcome: HostCallError, Error: "logged error"},
		HostCall{Name: "f", Args: json.RawMessage(`3`), Outcome: HostCallCanceled}))
	require.NoError(t, err)
	assert.JSONEq(t, `[{"ok":"logged"},{"err":"logged error"},{"ok":3},{"ok":4}]`, string(rec.Value))
	assert.Equal(t, int32(2), calls.Load(), "only the unanswered and the new call ran")
	require.Len(t, rec.HostCalls, 4)
	assert.JSONEq(t, `"logged"`, string(rec.HostCalls[0].Answer))
	assert.JSONEq(t, `4`, string(rec.HostCalls[3].Args))
	assert.JSONEq(t, `4`, string(rec.HostCalls[3].Answer))
	d, err := HostLogDigest(rec.HostCalls)
	require.NoError(t, err)
	assert.Equal(t, d, rec.Receipt.HostLog)
}

// TestReplayDivergesAtTheFirstDifference: another name, other arguments,
// or fewer calls than the log holds end the run replayDiverged, and the
// host function is not called for the differing call.
func TestReplayDivergesAtTheFirstDifference(t *testing.T) {
	logged := HostCall{Name: "f", Args: json.RawMessage(`1`), Outcome: HostCallOK, Answer: json.RawMessage(`1`)}
	for name, in := range map[string]json.RawMessage{
		"other arguments": relayInput(false, relayCall{"f", json.RawMessage(`2`)}),
		"other name":      relayInput(false, relayCall{"g", json.RawMessage(`1`)}),
		"fewer calls":     relayInput(false),
	} {
		t.Run(name, func(t *testing.T) {
			e, calls := durableFixture(t)
			rec, err := e.Run(context.Background(), durableCall(in, logged))
			var f *Failure
			require.True(t, errors.As(err, &f), "%v", err)
			assert.Equal(t, CodeReplayDiverged, f.Code)
			assert.ErrorIs(t, err, ErrReplayDiverged)
			assert.Equal(t, "replayDiverged", rec.Receipt.Outcome)
			assert.Nil(t, rec.Value)
			assert.Equal(t, int32(0), calls.Load())
		})
	}
}

// TestDurableCallRefused: a durable call with an invalid log or bounds,
// or on an engine that does not declare Deterministic, is an invalid
// call, refused before the backend.
func TestDurableCallRefused(t *testing.T) {
	e, _ := durableFixture(t)
	in := relayInput(false)
	for name, d := range map[string]*Durable{
		"no bounds":     {},
		"bad name":      {MaxSuspensions: 1, MaxLogBytes: 1, Replay: []HostCall{{Name: "1x", Args: json.RawMessage(`1`), Outcome: HostCallCanceled}}},
		"bad args":      {MaxSuspensions: 1, MaxLogBytes: 1, Replay: []HostCall{{Name: "f", Args: json.RawMessage(`{`), Outcome: HostCallCanceled}}},
		"no answer":     {MaxSuspensions: 1, MaxLogBytes: 1, Replay: []HostCall{{Name: "f", Args: json.RawMessage(`1`), Outcome: HostCallOK}}},
		"no outcome":    {MaxSuspensions: 1, MaxLogBytes: 1, Replay: []HostCall{{Name: "f", Args: json.RawMessage(`1`)}}},
		"not suspended": {MaxSuspensions: 1, MaxLogBytes: 1, Resumes: &Receipt{Outcome: OutcomeOK}},
	} {
		t.Run(name, func(t *testing.T) {
			rec, err := e.Run(context.Background(), Call{Source: hostScript, Input: in, Durable: d})
			assert.ErrorIs(t, err, ErrInvalidHost)
			assert.Nil(t, rec)
		})
	}
	plain, _ := hostFixture(t, &Options{Host: HostFuncs{"f": echoHost}})
	_, err := plain.Run(context.Background(), durableCall(in))
	assert.ErrorIs(t, err, ErrInvalidHost, "the relay does not declare Deterministic")
}
