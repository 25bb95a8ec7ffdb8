package effect

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

func TestSourceRunsAsIfStored(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	src := []byte("not in the store")
	out, err := f.e.Evaluate(context.Background(), Call{Source: src, Input: 7})
	require.NoError(t, err)
	assert.JSONEq(t, `7`, string(out))
	assert.Equal(t, src, f.fb.LastRequest().Script)
	assert.Zero(t, f.reader.reads.Load(), "a call by source does not read the store")
	_, err = f.reader.ReadScript(context.Background(), record.AddressOf(src))
	assert.Error(t, err, "a call by source does not write the store")
	f.reader.reads.Store(0)

	// Both, matching: the same run, still without the store.
	_, err = f.e.Evaluate(context.Background(), Call{Script: record.AddressOf(src), Source: src, Input: 7})
	require.NoError(t, err)
	assert.Equal(t, src, f.fb.LastRequest().Script)
	assert.Zero(t, f.reader.reads.Load())

	// The empty script is a script.
	_, err = f.e.Evaluate(context.Background(), Call{Source: []byte{}, Input: 7})
	require.NoError(t, err)
	assert.Empty(t, f.fb.LastRequest().Script)
}

func TestSourceIsCopied(t *testing.T) {
	src := []byte("original")
	var seen []byte
	f := newFixture(t, func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		seen = req.Script
		return okOutcome(`1`), nil
	}, nil)
	_, err := f.e.Evaluate(context.Background(), Call{Source: src, Input: 1})
	require.NoError(t, err)
	require.Equal(t, src, seen)
	src[0] = 'X'
	assert.Equal(t, "original", string(seen), "the backend got a copy of the caller's bytes")
}

func TestSourceInvalid(t *testing.T) {
	cases := []struct {
		name string
		call Call
		kind error
		text string
	}{
		{"neither", Call{Input: 1}, ErrInvalidSource, "effect: a call needs a Script address, a Source, or both"},
		{"mismatch", Call{Script: record.AddressOf([]byte("a")), Source: []byte("b"), Input: 1}, ErrInvalidSource,
			"effect: the call's Source does not hash to its Script address"},
		{"malformed address with source", Call{Script: "sha256:x", Source: []byte("b"), Input: 1}, ErrInvalidAddress,
			`effect: malformed script address (want "sha256:" and 64 lower-case hex digits)`},
		{"neither, bad input too", Call{Input: make(chan int)}, ErrInvalidSource,
			"effect: a call needs a Script address, a Source, or both"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Echo(), nil)
			_, err := f.e.Evaluate(context.Background(), tc.call)
			requireInvalid(t, err, tc.kind)
			assert.EqualError(t, err, tc.text)
			f.untouched(t)
		})
	}
}

func TestScriptTooLarge(t *testing.T) {
	opts := &Options{MaxScriptBytes: 8}
	t.Run("source", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), opts)
		_, err := f.e.Evaluate(context.Background(), Call{Source: []byte("123456789"), Input: 1})
		fail := requireFailure(t, err, record.CodeScriptTooLarge)
		assert.ErrorIs(t, err, ErrScriptTooLarge)
		assert.Equal(t, int64(9), fail.Bytes)
		assert.Equal(t, int64(8), fail.Limit)
		assert.EqualError(t, err, "effect: scriptTooLarge (9 bytes, limit 8)")
		f.untouched(t)
	})
	t.Run("source at the bound", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), opts)
		_, err := f.e.Evaluate(context.Background(), Call{Source: []byte("12345678"), Input: 1})
		require.NoError(t, err)
	})
	t.Run("stored", func(t *testing.T) {
		store := newMemoryStore()
		addr, err := store.Put([]byte("123456789"))
		require.NoError(t, err)
		fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
		e, err := New(store, fb, opts)
		require.NoError(t, err)
		_, err = e.Evaluate(context.Background(), Call{Script: addr, Input: 1})
		fail := requireFailure(t, err, record.CodeScriptTooLarge)
		assert.Equal(t, int64(9), fail.Bytes)
		assert.Equal(t, int64(8), fail.Limit)
		assert.Zero(t, fb.Calls(), "the backend is not touched")
	})
	t.Run("default", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), nil)
		assert.Equal(t, DefaultMaxScriptBytes, f.e.maxScript)
		assert.Equal(t, int64(16<<20), DefaultMaxScriptBytes)
		_, err := f.e.Evaluate(context.Background(), Call{Source: make([]byte, DefaultMaxScriptBytes+1), Input: 1})
		requireFailure(t, err, record.CodeScriptTooLarge)
	})
}

func TestBackendCannotForgeAnInvalidCall(t *testing.T) {
	// A backend or reader error that wraps ErrInvalidCall is still
	// infrastructure: only the effect decides the caller erred.
	f := newFixture(t, fakebackend.Fail(ErrInvalidLimits), nil)
	_, err := f.call(context.Background(), 1)
	requireUntyped(t, err)
	assert.NotErrorIs(t, err, ErrInvalidCall)

	e, err := New(readerFunc(func(context.Context, record.Address) ([]byte, error) { return nil, ErrClosed }),
		fakebackend.New(fakebackend.Capabilities(), nil), nil)
	require.NoError(t, err)
	_, err = e.Evaluate(context.Background(), Call{Script: record.AddressOf(testScript), Input: json.RawMessage(`1`)})
	requireUntyped(t, err)
	assert.NotErrorIs(t, err, ErrInvalidCall)
}

func TestInvalidSentinels(t *testing.T) {
	for _, s := range []error{ErrInvalidLimits, ErrInvalidShape, ErrInvalidAddress, ErrInvalidSource, ErrClosed} {
		assert.ErrorIs(t, s, ErrInvalidCall, s.Error())
		assert.False(t, Retryable(s))
		assert.Regexp(t, "^effect: ", s.Error())
		for _, other := range []error{ErrInvalidLimits, ErrInvalidShape, ErrInvalidAddress, ErrInvalidSource, ErrClosed} {
			if other != s {
				assert.NotErrorIs(t, s, other)
			}
		}
	}
	_, err := ParseAddress("x")
	assert.ErrorIs(t, err, ErrInvalidAddress)
}

// sizedBackend is a fake backend that declares a script bound of its own.
type sizedBackend struct {
	*fakebackend.Backend
	max   int
	panic bool
}

func (b sizedBackend) MaxScriptBytes() int {
	if b.panic {
		panic("broken MaxScriptBytes")
	}
	return b.max
}

func TestABackendsScriptBoundLowersTheEffects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend sizedBackend
		opts    *Options
		want    int64
	}{
		{"lower than the effect's", sizedBackend{max: 5}, &Options{MaxScriptBytes: 8}, 5},
		{"higher than the effect's", sizedBackend{max: 50}, &Options{MaxScriptBytes: 8}, 8},
		{"none", sizedBackend{max: 0}, &Options{MaxScriptBytes: 8}, 8},
		{"a panic is no bound", sizedBackend{max: 5, panic: true}, &Options{MaxScriptBytes: 8}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
			tc.backend.Backend = fb
			e, err := New(newMemoryStore(), tc.backend, tc.opts)
			require.NoError(t, err)
			_, err = e.Evaluate(context.Background(), Call{Source: make([]byte, tc.want+1), Input: 1})
			fail := requireFailure(t, err, record.CodeScriptTooLarge)
			assert.Equal(t, tc.want, fail.Limit)
			_, err = e.Evaluate(context.Background(), Call{Source: []byte(" 1"[:min(2, int(tc.want))]), Input: 1})
			require.NoError(t, err)
			assert.Equal(t, 1, fb.Calls(), "only the script within the bound reached the backend")
		})
	}
}
