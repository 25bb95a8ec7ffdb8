package canon

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// referenceCanonical is the definition appendCanonical implements: the
// encoding/json round trip through an any, numbers kept as json.Number,
// HTML escaping off, no trailing newline.
func referenceCanonical(value []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

var canonicalSeeds = []string{
	`null`, `true`, `false`, `0`, `-0`, `1.0`, `1e2`, `-1.5E-7`, `12345678901234567890123`,
	`""`, `"a"`, `"<&>"`, `"\u003c"`, `"\/"`, `"\b\f\n\r\t\u0001\u001f\u007f"`,
	`"\ud83d\ude00"`, `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`, `"\ud800x"`,
	"\"\xff\"", "\"\xed\xa0\x80\"", "\"a\xe2\x82\"", `"\u2028\u2029"`, "\"\u2028\"", `"é😀"`,
	`[]`, `{}`, ` [ 1 , [ ] , { } ] `, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a":1,"b":2,"a":3}`,
	`{"\u0061":1,"a":2}`, `{"é":1,"e":2,"z":3,"😀":4,"\ud800":5,"\ufffd":6}`,
	`{"k":{"z":[{"y":1,"x":[true,null]}],"a":"s"}}`, "{\"\xff\":1,\"\xfe\":2}",
	`{"a":{"c":1,"b":2},"a":{"d":3}}`,
	`[{"q":1,"p":2,"o":3,"n":4,"m":5,"l":6,"k":7,"j":8,"i":9,"h":10,"g":11,"f":12,"e":13,"d":14,"c":15,"b":16,"a":17,"a":18}]`,
}

func TestCanonicalMatchesEncodingJSON(t *testing.T) {
	for _, s := range canonicalSeeds {
		require.True(t, json.Valid([]byte(s)), s)
		want, err := referenceCanonical([]byte(s))
		require.NoError(t, err, s)
		got, err := Canonical([]byte(s))
		require.NoError(t, err, s)
		assert.Equal(t, string(want), string(got), "input %q", s)
	}
}

func TestCanonicalDeep(t *testing.T) {
	deep := strings.Repeat(`{"a":[`, 4000) + `1` + strings.Repeat(`]}`, 4000)
	got, err := Canonical([]byte(deep))
	require.NoError(t, err)
	assert.Equal(t, deep, string(got))
}

func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		want, err := referenceCanonical(b)
		if err != nil {
			return // beyond encoding/json's nesting limit
		}
		got, err := Canonical(b)
		if err != nil {
			t.Fatalf("Canonical(%q): %v", b, err)
		}
		if !bytes.Equal(want, got) {
			t.Fatalf("Canonical(%q)\n got %q\nwant %q", b, got, want)
		}
	})
}

// TestCanonicalRandom compares appendCanonical with the encoding/json round
// trip on many generated values (fixed seed), with the escapes, invalid
// UTF-8, surrogates, duplicate keys and white space that matter.
func TestCanonicalRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "z", "é", "😀", `\u00e9`, `\ud83d\ude00`, `\ud800`, `\udfff`, `\ud800\u0041`, "\xff", "\xed\xa0\x80",
		`\n`, `\u0000`, `\u001f`, `\/`, `\"`, `\\`, "<", "&", "\u2028", `\u2029`, "\x7f", `\b`, `\f`, " "}
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		return b.String()
	}
	ws := func() string { return []string{"", "", " ", "\n\t", "\r "}[rng.IntN(5)] }
	var gen func(depth int) string
	gen = func(depth int) string {
		k := rng.IntN(9)
		if depth > 4 {
			k = rng.IntN(5)
		}
		switch k {
		case 0:
			return []string{"null", "true", "false"}[rng.IntN(3)]
		case 1:
			return []string{"0", "-0", "1.50", "1e400", "-12345678901234567890", "2.5E-3"}[rng.IntN(6)]
		case 2, 3, 4:
			return str()
		case 5, 6:
			n := rng.IntN(5)
			parts := make([]string, n)
			for i := range parts {
				parts[i] = ws() + gen(depth+1) + ws()
			}
			return "[" + strings.Join(parts, ",") + "]"
		default:
			n := rng.IntN(20)
			parts := make([]string, n)
			keys := []string{`"a"`, `"b"`, `"\u0061"`, `"é"`, `"😀"`, `"\ud800"`, "\"\xff\"", `""`}
			for i := range parts {
				key := keys[rng.IntN(len(keys))]
				if rng.IntN(2) == 0 {
					key = str()
				}
				parts[i] = ws() + key + ws() + ":" + ws() + gen(depth+1)
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	}
	for range 3000 {
		s := []byte(ws() + gen(0) + ws())
		require.True(t, json.Valid(s), "%q", s)
		want, err := referenceCanonical(s)
		require.NoError(t, err)
		got, err := Canonical(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "input %q", s)
	}
}
