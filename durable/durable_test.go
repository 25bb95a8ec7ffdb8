package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// approval asks the host for rows, for an approval of them, then for more
// rows; its value shows the clock and the random source too, which a
// replay must give back the same.
const approval = `
const a = await host.get(input.n);
const ok = await host.approve({rows: a});
const b = await host.get(a + 1);
({a, ok, b, t: Date.now(), r: Math.random()})
`

var (
	qjsOnce sync.Once
	qjs     *quickjs.Backend
	qjsErr  error
)

// quickjsBackend is one QuickJS backend for the package's tests: New
// compiles its module, which is worth doing once.
func quickjsBackend(t testing.TB) spi.Backend {
	t.Helper()
	qjsOnce.Do(func() { qjs, qjsErr = quickjs.New(nil) })
	require.NoError(t, qjsErr)
	return qjs
}

// newEffect is an effect over backend, signing with signer when not nil.
func newEffect(t testing.TB, backend spi.Backend, signer effect.Signer) *effect.Effect {
	t.Helper()
	opts := &effect.Options{}
	if signer != nil {
		opts.Signer = signer
	}
	eff, err := effect.New(new(storage.MemoryStore), backend, opts)
	require.NoError(t, err)
	return eff
}

// hosts are the approval script's host functions: get doubles its
// argument and counts its calls; approve answers ok, or Suspend.
func hosts(gets *atomic.Int32, suspend bool) effect.HostFuncs {
	return effect.HostFuncs{
		"get": func(_ context.Context, args json.RawMessage) (any, error) {
			gets.Add(1)
			var n int
			if err := json.Unmarshal(args, &n); err != nil {
				return nil, err
			}
			return 2 * n, nil
		},
		"approve": func(context.Context, json.RawMessage) (any, error) {
			if suspend {
				return nil, effect.Suspend("a person must approve")
			}
			return true, nil
		},
	}
}

// suspended runs the approval script durably until it suspends.
func suspended(t *testing.T, eff *effect.Effect) *durable.Continuation {
	t.Helper()
	var gets atomic.Int32
	rec, cont, err := durable.Run(context.Background(), eff, effect.Call{Source: []byte(approval), Input: map[string]int{"n": 20}, Host: hosts(&gets, true)})
	require.ErrorIs(t, err, effect.ErrSuspended)
	require.NotNil(t, cont)
	assert.Equal(t, "suspended", rec.Receipt.Outcome)
	name, args, ok := cont.Pending()
	require.True(t, ok)
	assert.Equal(t, "approve", name)
	assert.JSONEq(t, `{"rows":40}`, string(args))
	assert.Equal(t, int32(1), gets.Load())
	return cont
}

// TestResumeGivesTheLiveValue: a run suspended at a host call, encoded,
// decoded and resumed on another effect with another backend instance
// (another process as far as the run can tell) with the answer gives the
// value a run that was answered live gives, clock and randomness
// included; the logged call is answered from the log, not run again; the
// final receipt chains to the suspended one and verifies with its log.
func TestResumeGivesTheLiveValue(t *testing.T) {
	ctx := context.Background()
	signer, err := receipt.GenerateEd25519Signer()
	require.NoError(t, err)
	var liveGets atomic.Int32
	live, err := newEffect(t, quickjsBackend(t), nil).Run(ctx, effect.Call{Source: []byte(approval), Input: map[string]int{"n": 20}, Host: hosts(&liveGets, false)})
	require.NoError(t, err)

	cont := suspended(t, newEffect(t, quickjsBackend(t), signer))
	text, err := cont.Encode()
	require.NoError(t, err)
	back, err := durable.Decode(text)
	require.NoError(t, err)

	other, err := quickjs.New(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	keys, err := receipt.NewKeySet(receipt.TrustedKey{PublicKey: signer.PublicKey()})
	require.NoError(t, err)
	var gets atomic.Int32
	rec, again, err := durable.Resume(ctx, newEffect(t, other, signer), back, json.RawMessage(`true`),
		effect.Call{Host: hosts(&gets, true)}, &durable.Options{Keys: keys})
	require.NoError(t, err)
	assert.Nil(t, again)
	assert.JSONEq(t, string(live.Value), string(rec.Value))
	assert.Equal(t, int32(1), gets.Load(), "the logged call is answered from the log")

	prev, err := cont.Receipt.Digest()
	require.NoError(t, err)
	assert.Equal(t, prev, rec.Receipt.Previous)
	assert.Equal(t, 1, rec.Receipt.Suspensions)
	require.Len(t, rec.HostCalls, 3)
	assert.NoError(t, receipt.Verify(rec, []byte(approval), map[string]int{"n": 20}, receipt.WithKeys(keys), receipt.RequireSignature()))
	rec.HostCalls[0].Answer = json.RawMessage(`41`)
	assert.ErrorIs(t, receipt.Verify(rec, []byte(approval), map[string]int{"n": 20}), receipt.ErrRecordMismatch,
		"the receipt covers the host-call log")
}

// TestReplayDiverged: a continuation whose log gives the first call
// another answer (the digest recomputed: it is not signed) makes the
// script ask for another approval than the pending one: the run ends
// replayDiverged, and the host function is never called with it.
func TestReplayDiverged(t *testing.T) {
	eff := newEffect(t, quickjsBackend(t), nil)
	cont := suspended(t, eff)
	cont.HostCalls[0].Answer = json.RawMessage(`41`)
	var err error
	cont.Receipt.HostLog, err = effect.HostLogDigest(cont.HostCalls)
	require.NoError(t, err)
	var gets atomic.Int32
	rec, again, err := durable.Resume(context.Background(), eff, cont, json.RawMessage(`true`), effect.Call{Host: hosts(&gets, true)}, nil)
	require.ErrorIs(t, err, effect.ErrReplayDiverged)
	assert.Nil(t, again)
	assert.Equal(t, "replayDiverged", rec.Receipt.Outcome)
	assert.Equal(t, int32(0), gets.Load())
	assert.Nil(t, rec.Value)
}

// TestTamperedContinuationRefused: a continuation changed after the run
// is refused as the caller's invalid request, before the script runs.
func TestTamperedContinuationRefused(t *testing.T) {
	signer, err := receipt.GenerateEd25519Signer()
	require.NoError(t, err)
	keys, err := receipt.NewKeySet(receipt.TrustedKey{PublicKey: signer.PublicKey()})
	require.NoError(t, err)
	eff := newEffect(t, quickjsBackend(t), signer)
	cont := suspended(t, eff)
	cases := []struct {
		name   string
		change func(c *durable.Continuation)
		opts   *durable.Options
		is     error
	}{
		{"log without its digest", func(c *durable.Continuation) { c.HostCalls[0].Answer = json.RawMessage(`41`) }, nil, durable.ErrInvalidContinuation},
		{"input without its digest", func(c *durable.Continuation) { c.Input = json.RawMessage(`{"n":21}`) }, nil, durable.ErrInvalidContinuation},
		{"input and digest, signed", func(c *durable.Continuation) {
			c.Input = json.RawMessage(`{"n":21}`)
			c.Receipt.InputDigest, _ = effect.InputDigest(c.Input)
		}, &durable.Options{Keys: keys}, durable.ErrInvalidContinuation},
		{"unsigned, keys given", func(c *durable.Continuation) { c.Receipt.Signature = nil }, &durable.Options{Keys: keys}, durable.ErrInvalidContinuation},
		{"another engine", func(c *durable.Continuation) { c.Receipt.Engine = "other" }, nil, effect.ErrInvalidHost},
		{"another script", func(c *durable.Continuation) { c.Source = []byte(approval + ";") }, nil, durable.ErrInvalidContinuation},
		{"no pending call", func(c *durable.Continuation) {
			c.HostCalls = c.HostCalls[:1]
			c.Receipt.HostLog, _ = effect.HostLogDigest(c.HostCalls)
		}, nil, durable.ErrInvalidContinuation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, err := cont.Encode()
			require.NoError(t, err)
			tampered, err := durable.Decode(text)
			require.NoError(t, err)
			c.change(tampered)
			var gets atomic.Int32
			rec, _, err := durable.Resume(context.Background(), eff, tampered, json.RawMessage(`true`), effect.Call{Host: hosts(&gets, true)}, c.opts)
			require.ErrorIs(t, err, c.is)
			assert.ErrorIs(t, err, effect.ErrInvalidCall)
			assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
			assert.Nil(t, rec)
			assert.Equal(t, int32(0), gets.Load())
		})
	}
}

// TestSuspensionsBounded: a script that asks for approval in a loop
// suspends MaxSuspensions times, then ends limitExceeded (suspensions).
func TestSuspensionsBounded(t *testing.T) {
	ctx := context.Background()
	eff := newEffect(t, quickjsBackend(t), nil)
	const loop = `for (let i = 0; ; i++) await host.approve(i);`
	fns := effect.HostFuncs{"approve": func(context.Context, json.RawMessage) (any, error) { return nil, effect.Suspend("again") }}
	_, cont, err := durable.Run(ctx, eff, effect.Call{Source: []byte(loop), Host: fns})
	require.ErrorIs(t, err, effect.ErrSuspended)
	for i := 1; i < durable.MaxSuspensions; i++ {
		_, cont, err = durable.Resume(ctx, eff, cont, json.RawMessage(`true`), effect.Call{Host: fns}, nil)
		require.ErrorIs(t, err, effect.ErrSuspended, "resumption %d", i)
		require.Equal(t, i, cont.Receipt.Suspensions)
	}
	rec, again, err := durable.Resume(ctx, eff, cont, json.RawMessage(`true`), effect.Call{Host: fns}, nil)
	var f *effect.Failure
	require.True(t, errors.As(err, &f), "%v", err)
	assert.Equal(t, effect.CodeLimitExceeded, f.Code)
	assert.Equal(t, effect.LimitSuspensions, f.Kind)
	assert.Equal(t, int64(durable.MaxSuspensions), f.Limit)
	assert.Nil(t, again)
	assert.NoError(t, receipt.Verify(rec, []byte(loop), nil))
}

// TestSuspendNeedsDeterminism: an engine that does not declare
// Deterministic runs nothing durably, and a Suspend in a run that is not
// durable is the caller's invalid request, not a value or a failure.
func TestSuspendNeedsDeterminism(t *testing.T) {
	ctx := context.Background()
	backend, err := goja.New(nil)
	require.NoError(t, err)
	require.False(t, backend.Capabilities().Deterministic)
	var gets atomic.Int32
	_, cont, err := durable.Run(ctx, newEffect(t, backend, nil), effect.Call{Source: []byte(approval), Input: map[string]int{"n": 1}, Host: hosts(&gets, true)})
	assert.ErrorIs(t, err, effect.ErrInvalidHost)
	assert.Nil(t, cont)
	assert.Equal(t, int32(0), gets.Load())

	_, err = newEffect(t, quickjsBackend(t), nil).Run(ctx, effect.Call{Source: []byte(approval), Input: map[string]int{"n": 1}, Host: hosts(&gets, true)})
	assert.ErrorIs(t, err, effect.ErrInvalidHost)
	assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
}

// TestHostLogBounded: a durable run whose log outgrows its bound ends
// limitExceeded (hostLog).
func TestHostLogBounded(t *testing.T) {
	eff := newEffect(t, quickjsBackend(t), nil)
	fns := effect.HostFuncs{"echo": func(_ context.Context, args json.RawMessage) (any, error) { return args, nil }}
	_, err := eff.Run(context.Background(), effect.Call{Source: []byte(`for (;;) await host.echo("0123456789");`), Host: fns,
		Durable: &effect.Durable{MaxSuspensions: 1, MaxLogBytes: 100}})
	var f *effect.Failure
	require.True(t, errors.As(err, &f), "%v", err)
	assert.Equal(t, effect.CodeLimitExceeded, f.Code)
	assert.Equal(t, effect.LimitHostLog, f.Kind)
	assert.Equal(t, int64(100), f.Limit)
}

// filesBackend is a backend that declares Files (the engine ignores
// them): enough to prove what a continuation records of input files.
type filesBackend struct{ spi.Backend }

func (b filesBackend) Capabilities() spi.Capabilities {
	c := b.Backend.Capabilities()
	c.Files = true
	return c
}

// TestResumeNeedsTheSameInputFiles: a continuation records the suspended
// run's input files by reference, and a resumption with other files (or
// none) is refused; with the same files it runs.
func TestResumeNeedsTheSameInputFiles(t *testing.T) {
	ctx := context.Background()
	eff := newEffect(t, filesBackend{quickjsBackend(t)}, nil)
	files := []spi.File{{Name: "data.csv", Data: []byte("a,b\n1,2\n")}}
	var gets atomic.Int32
	_, cont, err := durable.Run(ctx, eff, effect.Call{Source: []byte(approval), Input: map[string]int{"n": 20}, Host: hosts(&gets, true), Files: files})
	require.ErrorIs(t, err, effect.ErrSuspended)
	require.Len(t, cont.Receipt.InputFiles, 1)
	text, err := cont.Encode()
	require.NoError(t, err)
	back, err := durable.Decode(text)
	require.NoError(t, err)
	for name, other := range map[string][]spi.File{
		"other content": {{Name: "data.csv", Data: []byte("a,b\n1,3\n")}},
		"none":          nil,
	} {
		_, _, err := durable.Resume(ctx, eff, back, json.RawMessage(`true`), effect.Call{Host: hosts(&gets, false), Files: other}, nil)
		assert.ErrorIs(t, err, effect.ErrInvalidHost, name)
	}
	rec, _, err := durable.Resume(ctx, eff, back, json.RawMessage(`true`), effect.Call{Host: hosts(&gets, false), Files: files}, nil)
	require.NoError(t, err)
	assert.Equal(t, cont.Receipt.InputFiles, rec.Receipt.InputFiles)
}
