package receipt

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyFindsEveryMismatch(t *testing.T) {
	f := newFixture(t, fakebackend.Return(okOutcome(`{"n":1}`)), nil)
	rec, err := f.e.Run(context.Background(), effect.Call{Script: f.addr, Input: "in"})
	require.NoError(t, err)
	require.NoError(t, Verify(rec, testScript, "in"))

	tamper := func(change func(r *effect.Record)) *effect.Record {
		c := *rec
		change(&c)
		return &c
	}
	tests := []struct {
		name   string
		rec    *effect.Record
		script []byte
		input  any
		want   string
	}{
		{"nil", nil, testScript, "in", "no record"},
		{"other script", rec, []byte("other"), "in", "the script's address"},
		{"other input", rec, testScript, "out", "the input's digest"},
		{"unserialisable input", rec, testScript, make(chan int), "cannot be serialised"},
		{"other value", tamper(func(r *effect.Record) { r.Value = json.RawMessage(`{"n":2}`) }), testScript, "in", "the value's digest"},
		{"value not canonical", tamper(func(r *effect.Record) { r.Value = json.RawMessage(`{ "n":1}`) }), testScript, "in", "not canonical"},
		{"ok without value", tamper(func(r *effect.Record) { r.Value = nil }), testScript, "in", "without a value"},
		{"failure, outcome ok", tamper(func(r *effect.Record) { r.Failure = &effect.Failure{Code: record.CodeScriptError} }), testScript, "in", "with a failure"},
		{"failure, other outcome", tamper(func(r *effect.Record) {
			r.Value, r.Receipt.OutputDigest = nil, ""
			r.Receipt.Outcome = "limitExceeded"
			r.Failure = &effect.Failure{Code: record.CodeScriptError}
		}), testScript, "in", "the failure's code"},
		{"failure, other kind", tamper(func(r *effect.Record) {
			r.Value, r.Receipt.OutputDigest = nil, ""
			r.Receipt.Outcome, r.Receipt.LimitKind = "limitExceeded", "cpu"
			r.Failure = &effect.Failure{Code: record.CodeLimitExceeded, Kind: record.LimitMemory}
		}), testScript, "in", "limit kind"},
		{"infrastructure with value", tamper(func(r *effect.Record) { r.Receipt.Outcome = record.OutcomeInfrastructure }), testScript, "in", "with a value"},
		{"format", tamper(func(r *effect.Record) { r.Receipt.Format = "other/2" }), testScript, "in", "receipt format"},
		{"failure's text changed", tamper(func(r *effect.Record) {
			r.Value = nil
			r.Receipt.Outcome = "scriptError"
			r.Receipt.OutputDigest = sha(`{"code":"scriptError","message":"boom"}`)
			r.Failure = &effect.Failure{Code: record.CodeScriptError, Message: "BOOM"}
		}), testScript, "in", "the failure's digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.rec, tt.script, tt.input)
			require.ErrorIs(t, err, ErrRecordMismatch)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestVerifyReceiptAlone(t *testing.T) {
	f := newFixture(t, fakebackend.Return(okOutcome(`1`)), nil)
	rec, err := f.e.Run(context.Background(), effect.Call{Script: f.addr, Input: []int{1}})
	require.NoError(t, err)
	require.NoError(t, VerifyReceipt(rec.Receipt, testScript, []int{1}))
	err = VerifyReceipt(rec.Receipt, []byte("x"), []int{2})
	require.ErrorIs(t, err, ErrRecordMismatch)
	assert.ErrorContains(t, err, "the script's address")
	assert.ErrorContains(t, err, "the input's digest")
}
