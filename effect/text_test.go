package effect

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestBoundText(t *testing.T) {
	marker := truncationMarker
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"clean", "TypeError: x is not a function", "TypeError: x is not a function"},
		{"newline and tab kept", "a\n\tb", "a\n\tb"},
		{"carriage return replaced", "a\rb", "a\uFFFDb"},
		{"NUL and ESC replaced", "a\x00b\x1bc", "a\uFFFDb\uFFFDc"},
		{"DEL and C1 replaced", "a\x7fb\u0085c\u009fd", "a\uFFFDb\uFFFDc\uFFFDd"},
		{"invalid byte", "a\xffb", "a\uFFFDb"},
		{"truncated sequence", "a\xe2\x82", "a\uFFFD\uFFFD"},
		{"lone high surrogate (WTF-8)", "a\xed\xa0\x80b", "a\uFFFDb"},
		{"lone low surrogate (WTF-8)", "a\xed\xbf\xbfb", "a\uFFFDb"},
		{"surrogate pair (CESU-8)", "\xed\xa0\xbd\xed\xb8\x80", "\uFFFD\uFFFD"},
		{"astral kept", "😀", "😀"},
		{"non-BMP and accents", "é€😀", "é€😀"},
		{"exactly at the limit", strings.Repeat("a", MaxTextUnits), strings.Repeat("a", MaxTextUnits)},
		{"one over", strings.Repeat("a", MaxTextUnits+1), strings.Repeat("a", MaxTextUnits) + marker},
		{"pair at the limit", strings.Repeat("a", MaxTextUnits-2) + "😀", strings.Repeat("a", MaxTextUnits-2) + "😀"},
		{"pair not cut in half", strings.Repeat("a", MaxTextUnits-1) + "😀", strings.Repeat("a", MaxTextUnits-1) + marker},
		{"multi-byte counted in units", strings.Repeat("é", MaxTextUnits), strings.Repeat("é", MaxTextUnits)},
		{"multi-byte over", strings.Repeat("é", MaxTextUnits+1), strings.Repeat("é", MaxTextUnits) + marker},
		{"replacements count", strings.Repeat("\x00", MaxTextUnits+1), strings.Repeat("\uFFFD", MaxTextUnits) + marker},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, boundText(tc.in))
		})
	}
}

func TestTruncationMarker(t *testing.T) {
	assert.Equal(t, "…[truncated]", truncationMarker, "the marker is documented on MaxTextUnits")
	assert.Equal(t, 12, utf16Len(truncationMarker))
}

func TestBoundText5MB(t *testing.T) {
	in := strings.Repeat("ab😀\x00"+"\xed\xa0\x80", 5<<20/10)
	out := boundText(in)
	assert.True(t, utf8.ValidString(out))
	assert.True(t, strings.HasSuffix(out, truncationMarker))
	assert.LessOrEqual(t, utf16Len(out), MaxTextUnits+utf16Len(truncationMarker))
	assert.GreaterOrEqual(t, utf16Len(out), MaxTextUnits-1+utf16Len(truncationMarker))
}

// FuzzBoundText checks boundText's promises. Long texts are built from a
// short piece and a repeat count, so the corpus stays small: the fuzzer
// minimizes every new input, and minimizing a long one takes seconds.
func FuzzBoundText(f *testing.F) {
	for _, s := range []string{"", "a", "\xed\xa0\x80", "😀", "\x00\n\t", "é😀"} {
		f.Add(s, uint16(1))
	}
	f.Add("é😀", uint16(1500))
	f.Add("x", uint16(MaxTextUnits+1))
	f.Fuzz(func(t *testing.T, piece string, repeat uint16) {
		if len(piece)*int(repeat) > 1<<16 {
			return
		}
		s := strings.Repeat(piece, max(1, int(repeat)))
		out := boundText(s)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		body, cut := strings.CutSuffix(out, truncationMarker)
		if n := utf16Len(body); n > MaxTextUnits {
			t.Fatalf("%d units", n)
		}
		for _, r := range body {
			if isControl(r) {
				t.Fatalf("control character %U left in", r)
			}
		}
		if !cut && utf8.ValidString(s) && len(s) <= MaxTextUnits && !strings.ContainsFunc(s, isControl) && out != s {
			t.Fatalf("clean text changed: %q -> %q", s, out)
		}
		if !cut && boundText(out) != out {
			t.Fatalf("not idempotent on %q", s)
		}
	})
}

// TestExcerpt: an excerpt of a caller's text is scrubbed and bounded,
// whatever its length, and a short clean text is itself.
func TestExcerpt(t *testing.T) {
	assert.Equal(t, "quickjs", Excerpt("quickjs"))
	long := Excerpt(strings.Repeat("x", 1<<20))
	assert.Equal(t, strings.Repeat("x", maxExcerptUnits)+truncationMarker, long)
	assert.Equal(t, "a\uFFFDb", Excerpt("a\x00b"))
	assert.LessOrEqual(t, len(Excerpt(strings.Repeat("\U0001F600", 1<<18))), 4*maxExcerptUnits/2+len(truncationMarker))
}

// TestInvalidShapeQuotesAnExcerpt: a shape whose compile error quotes
// nearly MaxShapeBytes of the caller's schema is a short invalid call (at
// most 1 KiB) that still says what was wrong.
func TestInvalidShapeQuotesAnExcerpt(t *testing.T) {
	huge := strings.Repeat("n", MaxShapeBytes-64)
	for _, schema := range []string{
		`{"pattern":"` + strings.Repeat("(", maxShapePatternBytes) + `"}`,
		`{"$ref":"https://x/` + huge + `"}`,
		`{"properties":{"` + huge + `":{"type":9}}}`,
	} {
		_, err := compileShape([]byte(schema))
		assert.ErrorIs(t, err, ErrInvalidShape)
		assert.LessOrEqual(t, len(err.Error()), 1024)
		assert.Contains(t, err.Error(), "effect: invalid shape: ")
	}
}
