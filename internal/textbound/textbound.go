// Package textbound bounds and scrubs text that comes from a script, a
// backend or a caller before it is stored or quoted: package effect's
// texts, and the verification reasons of package receipt.
package textbound

import (
	"strings"
	"unicode/utf8"
)

// Marker is appended to a text that Bound cut short. It is outside the
// bound, so a bounded text is at most maxUnits plus len(Marker) UTF-16
// units long.
const Marker = "…[truncated]"

// Bound makes s safe to store and to log: invalid UTF-8, UTF-8 encoded
// surrogates (WTF-8 or CESU-8, as an engine converting from UTF-16 may
// produce for a lone surrogate) and control characters other than '\n' and
// '\t' become U+FFFD, and the result keeps at most maxUnits UTF-16 code
// units followed by Marker when something was cut. A surrogate pair (a
// rune outside the BMP) is never cut in half.
func Bound(s string, maxUnits int) string {
	if isClean(s, maxUnits) {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), 3*maxUnits) + len(Marker))
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
		case IsControl(r):
			r = utf8.RuneError
		}
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if units+n > maxUnits {
			b.WriteString(Marker)
			return b.String()
		}
		units += n
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

// isClean reports whether Bound(s, maxUnits) would return s
// unchanged. A valid UTF-8 text of at most maxUnits bytes has at most
// maxUnits UTF-16 units.
func isClean(s string, maxUnits int) bool {
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
				if IsControl(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// IsControl reports whether r is a C0 or C1 control character, or DEL,
// other than '\n' and '\t'.
func IsControl(r rune) bool {
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
