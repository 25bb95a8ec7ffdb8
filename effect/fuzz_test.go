package effect

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/spi"
)

// The fuzz targets of the effect: input encoding, outcome mapping (with
// the output bounds and canonical form behind it), text bounding
// (text_test.go) and canonical JSON (canonical_test.go). Seeds are short,
// and large or deep values are built from a short piece and a count: the
// fuzzer minimizes every new input it keeps, and minimizing a long one
// ties a worker up for seconds on a loaded machine (see TestMain).

// FuzzEncodeInput: any bytes given as a json.RawMessage are accepted as
// is when they are JSON text and refused as typed inputNotSerializable
// otherwise; a value decoded from them encodes again to JSON text.
func FuzzEncodeInput(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{``, ` `, `{`, `[1,]`, `1e400`, `-1e400`, `"\ud800"`, "\"\xff\"", `nul`, `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := encodeInput(json.RawMessage(b))
		if json.Valid(b) {
			if err != nil || !bytes.Equal(out, b) {
				t.Fatalf("valid JSON %q: got %q, %v", b, out, err)
			}
			if len(b) > 0 && &out[0] == &b[0] {
				t.Fatal("the raw input was not copied")
			}
		} else {
			var f *Failure
			if !errors.As(err, &f) || f.Code != CodeInputNotSerializable || f.Reason == "" {
				t.Fatalf("invalid JSON %q: got %v, want inputNotSerializable", b, err)
			}
			return
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return // a number out of float64's range, say: refused by Unmarshal
		}
		enc, err := encodeInput(v)
		if err != nil {
			var f *Failure
			if !errors.As(err, &f) || f.Code != CodeInputNotSerializable {
				t.Fatalf("re-encoding %q: %v", b, err)
			}
			return
		}
		if !json.Valid(enc) {
			t.Fatalf("re-encoding %q gave %q", b, enc)
		}
	})
}

// FuzzOutcome drives Evaluate with any outcome a backend could hand back
// and checks the mapping: an OK value comes back canonical and within the
// bounds; every error is a typed failure with a valid code that encodes to
// JSON, or a retryable infrastructure error; never an invalid call, never
// a panic; every text is bounded.
func FuzzOutcome(f *testing.F) {
	add := func(o spi.Outcome, depth uint16) {
		f.Add(int(o.Kind), int(o.Limit), []byte(o.Value), o.Name, o.Message, depth)
	}
	add(okOutcome(`{"b":[1,2],"a":"x"}`), 0)
	add(okOutcome(`1`), MaxOutputDepth)
	add(okOutcome(`1`), MaxOutputDepth+1)
	add(okOutcome(`"\ud800"`), 3)
	add(okOutcome(`{"a":`), 0)
	add(spi.Limited(spi.LimitCPU), 0)
	add(spi.Limited(9), 0)
	add(spi.Threw("TypeError", "boom\x00"+fakebackend.LoneSurrogate), 0)
	add(spi.InputTooLarge(), 0)
	add(spi.Infrastructure("down"), 0)
	add(spi.Outcome{Kind: 42}, 0)

	fb := fakebackend.New(fakebackend.Capabilities(), nil)
	e, err := New(newMemoryStore(), fb, &Options{MaxOutputBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind, limit int, value []byte, name, message string, depth uint16) {
		if int(depth)*2+len(value) > 1<<16 {
			return
		}
		v := value
		if depth > 0 {
			v = []byte(strings.Repeat("[", int(depth)) + string(value) + strings.Repeat("]", int(depth)))
		}
		out := spi.Outcome{Kind: spi.OutcomeKind(kind), Limit: spi.LimitKind(limit), Value: v, Name: name, Message: message}
		fb.SetBehavior(fakebackend.Return(out))
		got, err := e.Evaluate(context.Background(), Call{Source: testScript, Input: 1})
		if err == nil {
			if !json.Valid(got) || int64(len(got)) > e.maxOutput {
				t.Fatalf("OK result %q out of bounds or not JSON", got)
			}
			again, cerr := canonicalize(got)
			if cerr != nil || !bytes.Equal(again, got) {
				t.Fatalf("result %q is not canonical", got)
			}
			return
		}
		if errors.Is(err, ErrInvalidCall) {
			t.Fatalf("a backend outcome became an invalid call: %v", err)
		}
		for _, text := range []string{err.Error()} {
			if !utf8.ValidString(text) || utf16Len(text) > 4*MaxTextUnits {
				t.Fatalf("unbounded error text (%d units)", utf16Len(text))
			}
		}
		var fail *Failure
		if !errors.As(err, &fail) {
			if !Retryable(err) {
				t.Fatalf("an untyped error is not retryable: %v", err)
			}
			return
		}
		if !fail.Code.Valid() || Retryable(err) {
			t.Fatalf("bad failure %#v", fail)
		}
		if _, jerr := json.Marshal(fail); jerr != nil {
			t.Fatalf("failure %#v does not encode: %v", fail, jerr)
		}
		for _, s := range []string{fail.Name, fail.Message, fail.Reason} {
			if s != boundText(s) {
				t.Fatalf("failure text not bounded: %q", s)
			}
		}
	})
}

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
	sc := signerConfig{}
	if err := sc.init(fuzzKey); err != nil {
		f.Fatal(err)
	}
	for _, run := range realRuns(f) {
		b, err := json.Marshal(run.rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, run.script, []byte(run.input))
		signed := *run.rec
		if err := sc.sign(context.Background(), &signed.Receipt); err != nil {
			f.Fatal(err)
		}
		if b, err = json.Marshal(&signed); err != nil {
			f.Fatal(err)
		}
		f.Add(b, run.script, []byte(run.input))
	}
	key := WithKey(fuzzKey.PublicKey())
	f.Fuzz(func(t *testing.T, stored, script, input []byte) {
		// What the strict decoders accept reads one way: encoding/json
		// reads the same.
		if r, err := DecodeReceipt(stored); err == nil {
			var lenient Receipt
			if json.Unmarshal(stored, &lenient) != nil || !reflect.DeepEqual(r, lenient) {
				t.Fatalf("DecodeReceipt reads %+v, encoding/json %+v", r, lenient)
			}
		}
		if rec, err := DecodeRecord(stored); err == nil {
			if err := Verify(rec, script, json.RawMessage(input)); err != nil && !errors.Is(err, ErrRecordMismatch) {
				t.Fatalf("Verify of a decoded record refused with %v, not ErrRecordMismatch", err)
			}
		}
		var r Receipt
		if json.Unmarshal(stored, &r) == nil {
			if err := VerifyReceipt(r, script, json.RawMessage(input)); err != nil && !errors.Is(err, ErrRecordMismatch) {
				t.Fatalf("VerifyReceipt refused with %v, not ErrRecordMismatch", err)
			}
			if err := VerifyReceipt(r, script, json.RawMessage(input), key, RequireSignature()); err != nil && !errors.Is(err, ErrRecordMismatch) {
				t.Fatalf("VerifyReceipt with a key refused with %v, not ErrRecordMismatch", err)
			}
		}
		var rec Record
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
		var back Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("an accepted record does not decode: %v", err)
		}
		if err := Verify(&back, script, json.RawMessage(input)); err != nil {
			t.Fatalf("an accepted record does not verify after a JSON round trip: %v\n%s", err, b)
		}
		rc := rec.Receipt
		code, failed := codeNamed(rc.Outcome)
		switch {
		case !failed && rc.Outcome != OutcomeOK && rc.Outcome != OutcomeInfrastructure && rc.Outcome != OutcomeCanceled:
			t.Fatalf("accepted outcome %q", rc.Outcome)
		case (rec.Value != nil) != (rc.Outcome == OutcomeOK):
			t.Fatalf("accepted outcome %q with value %q", rc.Outcome, rec.Value)
		case (rec.Failure != nil) != failed || failed && rec.Failure.Code != code:
			t.Fatalf("accepted outcome %q with failure %+v", rc.Outcome, rec.Failure)
		case (rc.OutputDigest != "") != (failed || rc.Outcome == OutcomeOK):
			t.Fatalf("accepted outcome %q with output digest %q", rc.Outcome, rc.OutputDigest)
		case (rc.LimitKind != "") && code != CodeLimitExceeded && code != CodeInputTooLarge,
			code == CodeLimitExceeded && rc.LimitKind == "":
			t.Fatalf("accepted outcome %q with limit kind %q", rc.Outcome, rc.LimitKind)
		}
	})
}
