package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

func TestFailureErrorAndJSON(t *testing.T) {
	addr := record.AddressOf([]byte("x"))
	cases := []struct {
		f        Failure
		sentinel error
		text     string
		json     string
	}{
		{Failure{Code: record.CodeInputNotSerializable, Reason: "json: unsupported value: NaN"}, ErrInputNotSerializable,
			"effect: inputNotSerializable: json: unsupported value: NaN", `{"code":"inputNotSerializable","reason":"json: unsupported value: NaN"}`},
		{Failure{Code: record.CodeInputTooLarge, Bytes: 40, Limit: 32}, ErrInputTooLarge,
			"effect: inputTooLarge (40 bytes, limit 32)", `{"code":"inputTooLarge","bytes":40,"limit":32}`},
		{Failure{Code: record.CodeInputTooLarge, Kind: record.LimitInput, Bytes: 40, Limit: 32}, ErrInputTooLarge,
			"effect: inputTooLarge (40 bytes of input, over the input ceiling of 32 bytes)",
			`{"code":"inputTooLarge","kind":"input","bytes":40,"limit":32}`},
		{Failure{Code: record.CodeInputTooLarge, Kind: record.LimitMemory, Bytes: 40, Limit: 32}, ErrInputTooLarge,
			"effect: inputTooLarge (40 bytes of input did not fit in the engine's memory limit of 32 bytes while being parsed)",
			`{"code":"inputTooLarge","kind":"memory","bytes":40,"limit":32}`},
		{Failure{Code: record.CodeLimitExceeded, Kind: record.LimitOutput, Reason: "too deep"}, ErrLimitExceeded,
			"effect: limitExceeded (output): too deep", `{"code":"limitExceeded","kind":"output","reason":"too deep"}`},
		{Failure{Code: record.CodeScriptTooLarge, Bytes: 40, Limit: 32}, ErrScriptTooLarge,
			"effect: scriptTooLarge (40 bytes, limit 32)", `{"code":"scriptTooLarge","bytes":40,"limit":32}`},
		{Failure{Code: record.CodeScriptMissing, Script: addr}, ErrScriptMissing,
			"effect: scriptMissing (" + string(addr) + ")", `{"code":"scriptMissing","script":"` + string(addr) + `"}`},
		{Failure{Code: record.CodeLimitExceeded, Kind: record.LimitMemory}, ErrLimitExceeded,
			"effect: limitExceeded (memory)", `{"code":"limitExceeded","kind":"memory"}`},
		{Failure{Code: record.CodeLimitExceeded, Kind: record.LimitOutput}, ErrLimitExceeded,
			"effect: limitExceeded (output)", `{"code":"limitExceeded","kind":"output"}`},
		{Failure{Code: record.CodeScriptError, Name: "TypeError", Message: "msg"}, ErrScriptError,
			"effect: scriptError: TypeError: msg", `{"code":"scriptError","name":"TypeError","message":"msg"}`},
		{Failure{Code: record.CodeScriptError, Message: "<msg>"}, ErrScriptError,
			"effect: scriptError: <msg>", `{"code":"scriptError","message":"\u003cmsg\u003e"}`},
		{Failure{Code: record.CodeScriptError}, ErrScriptError,
			"effect: scriptError: ", `{"code":"scriptError","message":""}`},
		{Failure{Code: record.CodeShapeMismatch, Reason: "at '/n': got string, want integer"}, ErrShapeMismatch,
			"effect: shapeMismatch: at '/n': got string, want integer", `{"code":"shapeMismatch","reason":"at '/n': got string, want integer"}`},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			f := tc.f
			var err error = fmt.Errorf("outer: %w", &f)
			assert.Equal(t, tc.text, f.Error())
			assert.Same(t, tc.sentinel, f.Unwrap())
			assert.ErrorIs(t, err, tc.sentinel)
			var got *Failure
			require.ErrorAs(t, err, &got)
			assert.Same(t, &f, got)
			for _, other := range []error{ErrInputNotSerializable, ErrInputTooLarge, ErrScriptMissing, ErrLimitExceeded, ErrScriptError, ErrShapeMismatch, ErrScriptTooLarge, ErrInvalidCall} {
				if other != tc.sentinel {
					assert.NotErrorIs(t, err, other)
				}
			}
			b, jerr := json.Marshal(&f)
			require.NoError(t, jerr)
			assert.Equal(t, tc.json, string(b))
		})
	}
}

func TestFailureInvalid(t *testing.T) {
	f := &Failure{Code: 42}
	assert.Equal(t, "effect: Code(42)", f.Error())
	assert.Nil(t, f.Unwrap())
	_, err := json.Marshal(f)
	assert.Error(t, err)
	_, err = json.Marshal(&Failure{Code: record.CodeLimitExceeded})
	assert.Error(t, err, "limitExceeded needs a valid kind")
	_, err = json.Marshal(&Failure{})
	assert.Error(t, err)
}

func TestEnumStrings(t *testing.T) {
	assert.Equal(t, "Code(0)", record.Code(0).String())
	assert.False(t, record.Code(0).Valid())
	assert.Equal(t, "shapeMismatch", record.CodeShapeMismatch.String())
	assert.Equal(t, record.Code(7), record.CodeScriptTooLarge, "codes are appended, never renumbered")
	assert.Equal(t, "scriptTooLarge", record.CodeScriptTooLarge.String())
	assert.Equal(t, record.Code(8), record.CodeSuspended, "codes are appended, never renumbered")
	assert.Equal(t, record.Code(9), record.CodeReplayDiverged, "codes are appended, never renumbered")
	assert.Equal(t, "Code(10)", record.Code(10).String())
	assert.Equal(t, "LimitKind(0)", record.LimitKind(0).String())
	assert.Equal(t, record.LimitKind(7), record.LimitSuspensions, "limit kinds are appended, never renumbered")
	assert.Equal(t, record.LimitKind(8), record.LimitHostLog, "limit kinds are appended, never renumbered")
	assert.Equal(t, record.LimitKind(9), record.LimitFiles, "limit kinds are appended, never renumbered")
	assert.Equal(t, "files", record.LimitFiles.String())
	assert.Equal(t, "LimitKind(10)", record.LimitKind(10).String())
	assert.Equal(t, record.LimitKind(6), record.LimitHostCalls, "limit kinds are appended, never renumbered")
	assert.Equal(t, "input", record.LimitInput.String())
	assert.Equal(t, "wallClock", record.LimitWallClock.String())
}

// TestLimitKindOf pins the relationship of the two LimitKind types: every
// spi kind maps to the effect kind of the same name (and number), and
// nothing else maps.
func TestLimitKindOf(t *testing.T) {
	n := 0
	for k := spi.LimitKind(-1); k < 20; k++ {
		got, ok := record.LimitKindOf(k)
		if !k.Valid() {
			assert.False(t, ok, "spi kind %d is invalid", int(k))
			assert.Zero(t, got)
			continue
		}
		n++
		require.True(t, ok, "spi kind %s has no effect kind", k)
		assert.Equal(t, k.String(), got.String(), "same name")
		assert.Equal(t, int(k), int(got), "same number")
	}
	assert.Equal(t, 4, n, "spi's set grew: map the new kind in LimitKindOf")
	for _, k := range []record.LimitKind{record.LimitOutput, record.LimitInput, record.LimitHostCalls} {
		assert.False(t, spi.LimitKind(k).Valid(), "%s is the effect's own kind", k)
	}
}

func TestRetryable(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"failure", &Failure{Code: record.CodeScriptError}, false},
		{"wrapped failure", fmt.Errorf("x: %w", &Failure{Code: record.CodeLimitExceeded}), false},
		{"sentinel alone", ErrScriptError, true},
		{"canceled", context.Canceled, false},
		{"wrapped canceled", fmt.Errorf("x: %w", context.Canceled), false},
		{"caller deadline", context.DeadlineExceeded, true},
		{"untyped", errors.New("effect: backend failed"), true},
		{"closed", ErrClosed, false},
		{"invalid call", ErrInvalidCall, false},
		{"invalid limits", ErrInvalidLimits, false},
		{"wrapped invalid shape", fmt.Errorf("x: %w", ErrInvalidShape), false},
		{"invalid address", ErrInvalidAddress, false},
		{"invalid source", ErrInvalidSource, false},
		{"script too large", &Failure{Code: record.CodeScriptTooLarge, Bytes: 2, Limit: 1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Retryable(tc.err))
		})
	}
}

func TestAddress(t *testing.T) {
	assert.Equal(t, record.Address("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), record.AddressOf(nil))
	assert.Equal(t, record.Address("sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), record.AddressOf([]byte("abc")))
	a, err := ParseAddress(string(record.AddressOf([]byte("abc"))))
	require.NoError(t, err)
	assert.Equal(t, record.AddressOf([]byte("abc")), a)
	_, err = ParseAddress("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD")
	assert.EqualError(t, err, `effect: malformed script address (want "sha256:" and 64 lower-case hex digits)`)
}

// TestFailureJSONCoversEveryCodeAndKind: every code and every limit kind of
// the closed sets reads back from its JSON (a kind added later, such as
// hostCalls, included).
func TestFailureJSONCoversEveryCodeAndKind(t *testing.T) {
	var all []*Failure
	for c := record.Code(1); c.Valid(); c++ {
		switch c {
		case record.CodeLimitExceeded: // with every kind, below
		case record.CodeInputTooLarge:
			all = append(all, &Failure{Code: c, Kind: record.LimitInput, Bytes: 2, Limit: 1})
		default:
			all = append(all, &Failure{Code: c})
		}
	}
	for k := record.LimitKind(1); k.Valid(); k++ {
		all = append(all, &Failure{Code: record.CodeLimitExceeded, Kind: k})
	}
	for _, want := range all {
		b, err := json.Marshal(want)
		require.NoError(t, err)
		var got Failure
		require.NoError(t, json.Unmarshal(b, &got), "%s", b)
		assert.Equal(t, *want, got, "%s", b)
	}
}
