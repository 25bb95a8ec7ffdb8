package receipt

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

// fuzzKey signs FuzzVerify's signed seeds.
var fuzzKey, _ = NewEd25519Signer(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))

// FuzzVerify: Verify and VerifyReceipt never panic on a stored record of
// any bytes, refuse only with ErrRecordMismatch, and a record Verify
// accepts is internally consistent: its receipt verifies alone, it
// verifies again after a JSON round trip, and its outcome, value, failure,
// limit kind and output digest agree with one another. The seeds are real
// records of every outcome kind, with their scripts and inputs, unsigned
// and signed by fuzzKey; with that key, Verify refuses only with
// ErrRecordMismatch too.
func FuzzVerify(f *testing.F) {
	for _, runs := range []map[string]verifyRun{realRuns(f), realRunsSignedBy(f, fuzzKey)} {
		for _, run := range runs {
			b, err := json.Marshal(run.rec)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, run.script, []byte(run.input))
		}
	}
	key := WithKey(fuzzKey.PublicKey())
	f.Fuzz(func(t *testing.T, stored, script, input []byte) {
		// What the strict decoders accept reads one way: encoding/json
		// reads the same.
		if r, err := DecodeReceipt(stored); err == nil {
			var lenient record.Receipt
			if json.Unmarshal(stored, &lenient) != nil || !reflect.DeepEqual(r, lenient) {
				t.Fatalf("DecodeReceipt reads %+v, encoding/json %+v", r, lenient)
			}
		}
		if rec, err := DecodeRecord(stored); err == nil {
			if err := Verify(rec, script, json.RawMessage(input)); err != nil && !errors.Is(err, ErrRecordMismatch) {
				t.Fatalf("Verify of a decoded record refused with %v, not ErrRecordMismatch", err)
			}
		}
		var r record.Receipt
		if json.Unmarshal(stored, &r) == nil {
			if err := VerifyReceipt(r, script, json.RawMessage(input)); err != nil && !errors.Is(err, ErrRecordMismatch) {
				t.Fatalf("VerifyReceipt refused with %v, not ErrRecordMismatch", err)
			}
			if err := VerifyReceipt(r, script, json.RawMessage(input), key, RequireSignature()); err != nil && !errors.Is(err, ErrRecordMismatch) {
				t.Fatalf("VerifyReceipt with a key refused with %v, not ErrRecordMismatch", err)
			}
		}
		var rec effect.Record
		if json.Unmarshal(stored, &rec) != nil {
			return
		}
		err := Verify(&rec, script, json.RawMessage(input))
		if err != nil {
			if !errors.Is(err, ErrRecordMismatch) {
				t.Fatalf("Verify refused with %v, not ErrRecordMismatch", err)
			}
			return
		}
		if err := VerifyReceipt(rec.Receipt, script, json.RawMessage(input)); err != nil {
			t.Fatalf("Verify accepts the record but VerifyReceipt refuses its receipt: %v", err)
		}
		b, err := json.Marshal(&rec)
		if err != nil {
			t.Fatalf("an accepted record does not encode: %v", err)
		}
		var back effect.Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("an accepted record does not decode: %v", err)
		}
		if err := Verify(&back, script, json.RawMessage(input)); err != nil {
			t.Fatalf("an accepted record does not verify after a JSON round trip: %v\n%s", err, b)
		}
		rc := rec.Receipt
		code, failed := named[record.Code](rc.Outcome)
		switch {
		case !failed && rc.Outcome != record.OutcomeOK && rc.Outcome != record.OutcomeInfrastructure && rc.Outcome != record.OutcomeCanceled:
			t.Fatalf("accepted outcome %q", rc.Outcome)
		case (rec.Value != nil) != (rc.Outcome == record.OutcomeOK):
			t.Fatalf("accepted outcome %q with value %q", rc.Outcome, rec.Value)
		case (rec.Failure != nil) != failed || failed && rec.Failure.Code != code:
			t.Fatalf("accepted outcome %q with failure %+v", rc.Outcome, rec.Failure)
		case (rc.OutputDigest != "") != (failed || rc.Outcome == record.OutcomeOK):
			t.Fatalf("accepted outcome %q with output digest %q", rc.Outcome, rc.OutputDigest)
		case (rc.LimitKind != "") && code != record.CodeLimitExceeded && code != record.CodeInputTooLarge,
			code == record.CodeLimitExceeded && rc.LimitKind == "":
			t.Fatalf("accepted outcome %q with limit kind %q", rc.Outcome, rc.LimitKind)
		}
	})
}
