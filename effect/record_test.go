package effect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// logThen is a backend behavior that logs lines (level info, stdout) and
// then reports out.
func logThen(out spi.Outcome, lines ...string) fakebackend.Behavior {
	return func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
		for _, l := range lines {
			req.Log(spi.LevelInfo, spi.StreamStdout, l)
		}
		return out, nil
	}
}

func sha(b string) string {
	s := sha256.Sum256([]byte(b))
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestRunOK(t *testing.T) {
	f := newFixture(t, logThen(okOutcome(`{"b":1, "a":[1,2]}`), "one", "two"), &Options{Engine: "fake"})
	input := map[string]any{"z": 1, "a": "x"}
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr, Input: input})
	require.NoError(t, err)
	require.NotNil(t, rec)

	assert.Equal(t, `{"a":[1,2],"b":1}`, string(rec.Value))
	assert.Nil(t, rec.Failure)
	assert.Empty(t, rec.Error)
	require.Len(t, rec.Logs, 2)
	assert.Equal(t, "one", rec.Logs[0].Text)
	assert.Equal(t, "two", rec.Logs[1].Text)
	assert.Equal(t, spi.LevelInfo, rec.Logs[0].Level)
	assert.Equal(t, spi.StreamStdout, rec.Logs[0].Stream)
	assert.Nil(t, rec.LogsCut)

	r := rec.Receipt
	assert.Equal(t, record.ReceiptFormat, r.Format)
	assert.Equal(t, f.addr, r.Script)
	assert.Equal(t, sha(`{"a":"x","z":1}`), r.InputDigest, "sha256 of the canonical input")
	assert.Equal(t, sha(`{"a":[1,2],"b":1}`), r.OutputDigest, "sha256 of the canonical value")
	assert.Equal(t, "fake", r.Engine)
	assert.Equal(t, "github.com/sandbank/sandbank@(devel)", r.Backend, "the fake backend's module, from build info")
	assert.Equal(t, spi.Version, r.SPIVersion)
	assert.Equal(t, f.e.Capabilities(), r.Capabilities)
	assert.Equal(t, record.ReceiptLimits{WallClock: DefaultWallClock, MemoryBytes: DefaultMemoryBytes, MaxInputBytes: DefaultMaxInputBytes,
		MaxOutputBytes: DefaultMaxOutputBytes, MaxScriptBytes: DefaultMaxScriptBytes, MaxLogBytes: DefaultMaxLogBytes,
		MaxLogLines: DefaultMaxLogLines}, r.Limits)
	assert.Equal(t, record.OutcomeOK, r.Outcome)
	assert.Empty(t, r.LimitKind)
	assert.Equal(t, time.UTC, r.Started.Location())
	assert.WithinDuration(t, time.Now(), r.Started, time.Minute)
	assert.Equal(t, r.Duration, rec.Stats.Duration)

	assert.Equal(t, int64(len(`{"a":"x","z":1}`)), rec.Stats.InputBytes)
	assert.Equal(t, int64(len(testScript)), rec.Stats.ScriptBytes)
	assert.Equal(t, int64(len(rec.Value)), rec.Stats.OutputBytes)
	assert.Equal(t, int64(2), rec.Stats.LogLines)
	assert.Equal(t, int64(6), rec.Stats.LogBytes)
	assert.Positive(t, rec.Stats.BackendTime)

	// Evaluate is the same run without the record.
	out, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: input})
	require.NoError(t, err)
	assert.Equal(t, rec.Value, out)
}

// A record stores as JSON and reads back equal, for a value and for a
// typed failure.
func TestRecordJSONRoundTrip(t *testing.T) {
	for _, out := range []spi.Outcome{
		okOutcome(`{"n":1}`),
		okOutcome(`null`),
		spi.Threw("TypeError", "boom"),
		spi.Limited(spi.LimitMemory),
	} {
		f := newFixture(t, logThen(out, "line"), nil)
		rec, _ := f.e.Run(context.Background(), Call{Script: f.addr, Input: 1})
		require.NotNil(t, rec)
		b, err := json.Marshal(rec)
		require.NoError(t, err)
		var back Record
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		// time.Time round-trips without its monotonic reading.
		rec.Receipt.Started = rec.Receipt.Started.Round(0)
		assert.Equal(t, *rec, back, "%s", b)
	}
}

func TestRunTypedFailureKeepsLogs(t *testing.T) {
	f := newFixture(t, logThen(spi.Threw("Error", "nope"), "before the throw"), nil)
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr, Input: nil})
	fail := requireFailure(t, err, record.CodeScriptError)
	require.NotNil(t, rec)
	assert.Same(t, fail, rec.Failure)
	assert.Nil(t, rec.Value)
	require.Len(t, rec.Logs, 1)
	assert.Equal(t, "before the throw", rec.Logs[0].Text)
	assert.Equal(t, record.CodeScriptError.String(), rec.Receipt.Outcome)
	assert.Equal(t, sha(`{"code":"scriptError","message":"nope","name":"Error"}`), rec.Receipt.OutputDigest, "a failure's digest")

	f = newFixture(t, logThen(spi.Limited(spi.LimitCPU)), nil)
	rec, err = f.e.Run(context.Background(), Call{Script: f.addr})
	requireFailure(t, err, record.CodeLimitExceeded)
	require.NotNil(t, rec)
	assert.Equal(t, "limitExceeded", rec.Receipt.Outcome)
	assert.Equal(t, "cpu", rec.Receipt.LimitKind)
}

func TestRunRecordPresence(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, fakebackend.Return(okOutcome(`1`)), &Options{MaxInputBytes: 4})

	// An invalid call: no record.
	rec, err := f.e.Run(ctx, Call{Script: "sha256:nope"})
	requireInvalid(t, err, ErrInvalidAddress)
	assert.Nil(t, rec)
	rec, err = f.e.Run(nil, Call{Script: f.addr}) //nolint:staticcheck // the nil context is the point
	require.ErrorIs(t, err, ErrInvalidCall)
	assert.Nil(t, rec)

	// A typed failure before the backend: a record, no logs.
	rec, err = f.e.Run(ctx, Call{Script: f.addr, Input: "much too long"})
	requireFailure(t, err, record.CodeInputTooLarge)
	require.NotNil(t, rec)
	assert.Equal(t, "inputTooLarge", rec.Receipt.Outcome)
	assert.Equal(t, "input", rec.Receipt.LimitKind)
	assert.Equal(t, f.addr, rec.Receipt.Script)
	assert.NotNil(t, rec.Logs, "logs are [] in JSON, never null")
	assert.Zero(t, rec.Stats.BackendTime)

	// A missing script, run by address: a record naming it.
	missing := record.AddressOf([]byte("elsewhere"))
	rec, err = f.e.Run(ctx, Call{Script: missing})
	requireFailure(t, err, record.CodeScriptMissing)
	require.NotNil(t, rec)
	assert.Equal(t, missing, rec.Receipt.Script)

	// A run by source: the receipt has its address.
	rec, err = f.e.Run(ctx, Call{Source: []byte("other script")})
	require.NoError(t, err)
	assert.Equal(t, record.AddressOf([]byte("other script")), rec.Receipt.Script)

	// Infrastructure after the backend was called: a record with the error.
	f = newFixture(t, logThen(spi.Infrastructure("engine fell over"), "last words"), nil)
	rec, err = f.e.Run(ctx, Call{Script: f.addr})
	requireUntyped(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, record.OutcomeInfrastructure, rec.Receipt.Outcome)
	assert.Contains(t, rec.Error, "engine fell over")
	require.Len(t, rec.Logs, 1)
	assert.Equal(t, "last words", rec.Logs[0].Text)

	// Infrastructure before the backend: no record.
	broken := errors.New("store down")
	e, err := New(readerFunc(func(context.Context, record.Address) ([]byte, error) { return nil, broken }),
		fakebackend.New(fakebackend.Capabilities(), fakebackend.Return(okOutcome(`1`))), nil)
	require.NoError(t, err)
	rec, err = e.Run(ctx, Call{Script: f.addr})
	requireUntyped(t, err)
	assert.Nil(t, rec)
}

// The caller's cancellation wins in Run as in Evaluate, and the record of a
// run that reached the backend says so and keeps the lines logged so far.
func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFixture(t, func(bctx context.Context, req spi.Request) (spi.Outcome, error) {
		req.Log(spi.LevelWarn, spi.StreamStderr, "about to be cancelled")
		cancel()
		<-bctx.Done()
		return okOutcome(`1`), nil
	}, nil)
	rec, err := f.e.Run(ctx, Call{Script: f.addr})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, rec)
	assert.Equal(t, record.OutcomeCanceled, rec.Receipt.Outcome)
	assert.Nil(t, rec.Value)
	require.Len(t, rec.Logs, 1)
	assert.Equal(t, spi.LevelWarn, rec.Logs[0].Level)
	assert.Equal(t, spi.StreamStderr, rec.Logs[0].Stream)
	waitReturned(t, f.fb, 1)
}

// The same script, input, engine and limits give the same output digest,
// and the input digest does not depend on how the input was spelled.
func TestReceiptReplay(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	a, err := f.e.Run(context.Background(), Call{Script: f.addr, Input: map[string]int{"b": 2, "a": 1}})
	require.NoError(t, err)
	b, err := f.e.Run(context.Background(), Call{Script: f.addr, Input: json.RawMessage(`{ "b": 2, "a": 1 }`)})
	require.NoError(t, err)
	assert.Equal(t, a.Receipt.InputDigest, b.Receipt.InputDigest)
	assert.Equal(t, a.Receipt.OutputDigest, b.Receipt.OutputDigest)
	ra, rb := a.Receipt, b.Receipt
	ra.Started, ra.Duration, rb.Started, rb.Duration = time.Time{}, 0, time.Time{}, 0
	assert.Equal(t, ra, rb, "only the start and the duration differ")
}

func TestReceiptCanonical(t *testing.T) {
	f := newFixture(t, fakebackend.Return(okOutcome(`1`)), &Options{Engine: "fake"})
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	c, err := rec.Receipt.Canonical()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(c), `{"backend":`), "keys sorted: %s", c)
	assert.NotContains(t, string(c), "\n")
	text, err := canon.Canonical(c)
	require.NoError(t, err)
	assert.Equal(t, text, c)
	d1, err := rec.Receipt.Digest()
	require.NoError(t, err)
	assert.Equal(t, canon.Digest(c), d1)
	var back record.Receipt
	require.NoError(t, json.Unmarshal(c, &back))
	d2, err := back.Digest()
	require.NoError(t, err)
	assert.Equal(t, d1, d2, "a stored receipt has the same digest")
}

func TestOptionsRecordValidation(t *testing.T) {
	fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
	for _, o := range []Options{{MaxLogBytes: -1}, {MaxLogLines: -1}, {EventBuffer: -1}} {
		_, err := New(newMemoryStore(), fb, &o)
		requireInvalid(t, err, ErrInvalidLimits)
	}
	e, err := New(newMemoryStore(), fb, nil)
	require.NoError(t, err)
	assert.Equal(t, "*fakebackend.Backend", e.rc.engine, "the Go type names an unnamed engine")
}
