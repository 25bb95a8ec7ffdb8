package effect

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
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

func durableCall(input json.RawMessage, replay ...record.HostCall) Call {
	return Call{Source: hostScript, Input: input, Durable: &Durable{Replay: replay, MaxSuspensions: 2, MaxLogBytes: 1 << 10}}
}

// TestReplayAnswersFromTheLog: logged answers and errors are given back
// without calling the host function, a logged call without an answer
// runs live, and the record keeps every call's arguments and answer.
func TestReplayAnswersFromTheLog(t *testing.T) {
	e, calls := durableFixture(t)
	in := relayInput(false, relayCall{"f", json.RawMessage(`{"b":1,"a":2}`)}, relayCall{"f", json.RawMessage(`2`)}, relayCall{"f", json.RawMessage(`3`)}, relayCall{"f", json.RawMessage(`4`)})
	rec, err := e.Run(context.Background(), durableCall(in,
		record.HostCall{Name: "f", Args: json.RawMessage(`{"a":2,"b":1}`), Outcome: record.HostCallOK, Answer: json.RawMessage(`"logged"`)},
		record.HostCall{Name: "f", Args: json.RawMessage(`2`), Outcome: record.HostCallError, Error: "logged error"},
		record.HostCall{Name: "f", Args: json.RawMessage(`3`), Outcome: record.HostCallCanceled}))
	require.NoError(t, err)
	assert.JSONEq(t, `[{"ok":"logged"},{"err":"logged error"},{"ok":3},{"ok":4}]`, string(rec.Value))
	assert.Equal(t, int32(2), calls.Load(), "only the unanswered and the new call ran")
	require.Len(t, rec.HostCalls, 4)
	assert.JSONEq(t, `"logged"`, string(rec.HostCalls[0].Answer))
	assert.JSONEq(t, `4`, string(rec.HostCalls[3].Args))
	assert.JSONEq(t, `4`, string(rec.HostCalls[3].Answer))
	d, err := record.HostLogDigest(rec.HostCalls)
	require.NoError(t, err)
	assert.Equal(t, d, rec.Receipt.HostLog)
}

// TestReplayDivergesAtTheFirstDifference: another name, other arguments,
// or fewer calls than the log holds end the run replayDiverged, and the
// host function is not called for the differing call.
func TestReplayDivergesAtTheFirstDifference(t *testing.T) {
	logged := record.HostCall{Name: "f", Args: json.RawMessage(`1`), Outcome: record.HostCallOK, Answer: json.RawMessage(`1`)}
	for name, in := range map[string]json.RawMessage{
		"other arguments": relayInput(false, relayCall{"f", json.RawMessage(`2`)}),
		"other name":      relayInput(false, relayCall{"g", json.RawMessage(`1`)}),
		"fewer calls":     relayInput(false),
		"threw first":     json.RawMessage(`"not the relay's input"`),
	} {
		t.Run(name, func(t *testing.T) {
			e, calls := durableFixture(t)
			rec, err := e.Run(context.Background(), durableCall(in, logged))
			var f *Failure
			require.True(t, errors.As(err, &f), "%v", err)
			assert.Equal(t, record.CodeReplayDiverged, f.Code)
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
		"no bounds":  {},
		"bad name":   {MaxSuspensions: 1, MaxLogBytes: 1, Replay: []record.HostCall{{Name: "1x", Args: json.RawMessage(`1`), Outcome: record.HostCallCanceled}}},
		"bad args":   {MaxSuspensions: 1, MaxLogBytes: 1, Replay: []record.HostCall{{Name: "f", Args: json.RawMessage(`{`), Outcome: record.HostCallCanceled}}},
		"no answer":  {MaxSuspensions: 1, MaxLogBytes: 1, Replay: []record.HostCall{{Name: "f", Args: json.RawMessage(`1`), Outcome: record.HostCallOK}}},
		"no outcome": {MaxSuspensions: 1, MaxLogBytes: 1, Replay: []record.HostCall{{Name: "f", Args: json.RawMessage(`1`)}}},
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

// TestResumesChecked: a durable call resumes only a suspension of its own
// script and input on this engine; the effect itself decides a
// suspension (the host function's Suspend) and records it.
func TestResumesChecked(t *testing.T) {
	r := newRelay()
	r.deterministic = true
	e, err := New(newMemoryStore(), r, &Options{Host: HostFuncs{"f": func(context.Context, json.RawMessage) (any, error) {
		return nil, Suspend("later")
	}}})
	require.NoError(t, err)
	in := relayInput(false, relayCall{"f", json.RawMessage(`1`)})
	rec, err := e.Run(context.Background(), durableCall(in))
	require.ErrorIs(t, err, ErrSuspended)
	assert.Equal(t, "later", rec.Failure.Reason)
	require.Len(t, rec.HostCalls, 1)
	assert.Equal(t, record.HostCallSuspended, rec.HostCalls[0].Outcome)
	suspended := rec.Receipt
	for name, change := range map[string]func(r *record.Receipt){
		"as it is":       func(*record.Receipt) {},
		"not suspended":  func(r *record.Receipt) { r.Outcome = record.OutcomeOK },
		"another engine": func(r *record.Receipt) { r.Engine = "other" },
		"another input":  func(r *record.Receipt) { r.InputDigest = inputDigest([]byte(`2`)) },
		"another script": func(r *record.Receipt) { r.Script = record.AddressOf([]byte("other")) },
		"another SPI":    func(r *record.Receipt) { r.SPIVersion = "1.0.0" },
		"other caps":     func(r *record.Receipt) { r.Capabilities.Logs = true },
	} {
		t.Run(name, func(t *testing.T) {
			resumes := suspended
			change(&resumes)
			call := durableCall(in, record.HostCall{Name: "f", Args: json.RawMessage(`1`), Outcome: record.HostCallOK, Answer: json.RawMessage(`1`)})
			call.Durable.Resumes = &resumes
			rec, err := e.Run(context.Background(), call)
			if name == "as it is" {
				require.NoError(t, err)
				assert.Equal(t, 1, rec.Receipt.Suspensions)
				d, _ := suspended.Digest()
				assert.Equal(t, d, rec.Receipt.Previous)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidHost)
			assert.Nil(t, rec)
		})
	}
}

// TestReplayStoppedByALimit: a replay the engine stops at a limit before
// the logged calls ends limitExceeded: it ran out, it did not diverge.
func TestReplayStoppedByALimit(t *testing.T) {
	caps := fakebackend.Capabilities()
	caps.HostCalls, caps.Deterministic = true, true
	e, err := New(newMemoryStore(), fakebackend.New(caps, fakebackend.Return(spi.Limited(spi.LimitCPU))), &Options{Host: HostFuncs{"f": echoHost}})
	require.NoError(t, err)
	_, err = e.Run(context.Background(), durableCall(json.RawMessage(`1`),
		record.HostCall{Name: "f", Args: json.RawMessage(`1`), Outcome: record.HostCallOK, Answer: json.RawMessage(`1`)}))
	var f *Failure
	require.True(t, errors.As(err, &f), "%v", err)
	assert.Equal(t, record.CodeLimitExceeded, f.Code)
	assert.Equal(t, record.LimitCPU, f.Kind)
}
