package effect

import (
	"strings"
	"unicode/utf8"
)

// truncationMarker is appended to a text that boundText cut short. It is
// outside the MaxTextUnits budget, so a bounded text is at most
// MaxTextUnits plus len(truncationMarker) UTF-16 units long.
const truncationMarker = "…[truncated]"

// boundText makes s safe to store and to log: invalid UTF-8, UTF-8 encoded
// surrogates (WTF-8 or CESU-8, as an engine converting from UTF-16 may
// produce for a lone surrogate) and control characters other than '\n' and
// '\t' become U+FFFD, and the result keeps at most MaxTextUnits UTF-16 code
// units followed by truncationMarker when something was cut. A surrogate
// pair (a rune outside the BMP) is never cut in half.
//
// Every text that comes from a script, a backend or a script reader goes
// through boundText exactly once, in this package.
func boundText(s string) string { return boundTextTo(s, MaxTextUnits) }

// boundTextTo is boundText with a bound of maxUnits UTF-16 code units.
func boundTextTo(s string, maxUnits int) string {
	if textIsClean(s, maxUnits) {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), 3*maxUnits) + len(truncationMarker))
	units := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			// An encoded surrogate (ED A0..BF 80..BF) is one replacement,
			// not three.
			if isEncodedSurrogate(s[i:]) {
				size = 3
			} else {
				size = 1
			}
			r = utf8.RuneError
		case isControl(r):
			r = utf8.RuneError
		}
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if units+n > maxUnits {
			b.WriteString(truncationMarker)
			return b.String()
		}
		units += n
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

// textIsClean reports whether boundTextTo(s, maxUnits) would return s
// unchanged. A valid UTF-8 text of at most maxUnits bytes has at most
// maxUnits UTF-16 units.
func textIsClean(s string, maxUnits int) bool {
	if len(s) > maxUnits {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			// Multi-byte: fall back to a full check of the rest.
			rest := s[i:]
			if !utf8.ValidString(rest) {
				return false
			}
			for _, r := range rest {
				if isControl(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// isControl reports whether r is a C0 or C1 control character, or DEL,
// other than '\n' and '\t'.
func isControl(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// isEncodedSurrogate reports whether s starts with a surrogate code point
// encoded as UTF-8 bytes (which Go, correctly, treats as invalid).
func isEncodedSurrogate(s string) bool {
	return len(s) >= 3 && s[0] == 0xed && s[1] >= 0xa0 && s[1] <= 0xbf && s[2] >= 0x80 && s[2] <= 0xbf
}

// MaxExcerptUnits bounds the excerpt of a caller's text that an error
// message may quote (see Excerpt): 128 UTF-16 code units, plus the
// truncation marker when the text was cut.
const MaxExcerptUnits = 128

// Excerpt returns the part of a caller's text (an engine or language name,
// a flag's value, a field's name) that an error message may quote: s
// scrubbed as every text of a run is (invalid UTF-8, encoded surrogates
// and control characters other than '\n' and '\t' become U+FFFD) and cut
// to MaxExcerptUnits UTF-16 code units followed by "…[truncated]". Every
// door (the effect, the registry, the HTTP server, the command line,
// Temporal) quotes caller text through Excerpt, so an error stays short
// whatever the caller sent, and still says what it was about.
func Excerpt(s string) string { return boundTextTo(s, MaxExcerptUnits) }
