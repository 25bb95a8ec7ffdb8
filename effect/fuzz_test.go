package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
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
	for _, s := range []string{
		`null`, `-0`, `1e2`, `12345678901234567890123`, `"<&>"`, `"\ud800"`, "\"\xff\"", `"\u2028\u2029"`,
		` [ 1 , [ ] , { } ] `, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"k":{"z":[{"y":1,"x":[true,null]}],"a":"s"}}`,
	} {
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
			if !errors.As(err, &f) || f.Code != record.CodeInputNotSerializable || f.Reason == "" {
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
			if !errors.As(err, &f) || f.Code != record.CodeInputNotSerializable {
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
			again, cerr := canon.Canonical(got)
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
