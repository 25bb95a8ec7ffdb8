package starlark

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzConvert feeds decodeInput arbitrary text and checks the conversion
// both ways: JSON text the effect would accept (json.Valid, so nested at
// most 10,000 deep) always decodes; what is not JSON never does; the
// encoding of a decoded value is JSON text that means the same as the
// input (compared after a decode by encoding/json); and encoding is a
// fixed point after one round.
func FuzzConvert(f *testing.F) {
	for _, s := range []string{
		`9007199254740993`, `18446744073709551616`, `-1000000000000000000000000000000000000000`,
		`9223372036854775807`, `-9223372036854775808`, `3.25`, `1e-7`, `1.5e300`, `-0.5`, `1e400`, `-1e400`, `1e-400`,
		`"😀 𝄞 \ud83d\ude00 \"\\\n\t\r\b\f\/ \u0000\u001f\u2028\u2029"`, `"\ud800"`, "\"\xff\"",
		`"é ü 中文 ✓"`, `[true,false,null]`, `{"object":{},"array":[],"string":""}`,
		`{"b":1,"a":2,"c":{"z":0,"y":1}}`, `{"a":1,"a":2}`, strings.Repeat(`[`, 100) + `1` + strings.Repeat(`]`, 100),
		``, `{`, `1 2`, `{"a":}`, `[1,]`, `nul`, ` [ 1 , { "k" : [ ] } ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		v, err := decodeInput(text)
		if !json.Valid(text) {
			if err == nil {
				t.Fatalf("decoded text that is not JSON: %q", text)
			}
			return
		}
		if err != nil {
			t.Fatalf("refused valid JSON %q: %v", text, err)
		}
		out, err := encodeResult(v, int(DefaultMaxResultBytes), nil)
		if err != nil {
			// A non-finite float (1e400 reads as +Inf) has no JSON form.
			if strings.Contains(err.Error(), "non-finite") {
				return
			}
			t.Fatalf("encoding the decoded %q: %v", text, err)
		}
		if !json.Valid(out) {
			t.Fatalf("encoded %q as invalid JSON %q", text, out)
		}
		var want, got any
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber()
		if dec.Decode(&want) == nil {
			dec = json.NewDecoder(bytes.NewReader(out))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("decoding our %q: %v", out, err)
			}
			if !sameJSON(want, got) {
				t.Fatalf("%q encoded as %q, which means something else", text, out)
			}
		}
		v2, err := decodeInput(out)
		if err != nil {
			t.Fatalf("decoding our own %q: %v", out, err)
		}
		out2, err := encodeResult(v2, int(DefaultMaxResultBytes), nil)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("not a fixed point: %q then %q (%v)", out, out2, err)
		}
	})
}

// sameJSON compares two values decoded by encoding/json with UseNumber:
// numbers by value (1.0 is 1, 1e2 is 100), strings and the rest exactly.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, errx := x.Float64()
		fy, erry := y.Float64()
		return errx == nil && erry == nil && fx == fy
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameJSON(v, y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
