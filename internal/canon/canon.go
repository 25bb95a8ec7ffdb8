package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sandbank/sandbank/internal/jsonstr"
)

// The canonical form of a JSON value is what encoding/json produces when
// the value is decoded into an any (with UseNumber) and re-encoded with
// SetEscapeHTML(false), without the trailing newline: compact, object keys
// sorted bytewise by their decoded text, a duplicate key keeping its last
// value, strings decoded (invalid UTF-8 and lone surrogate escapes become
// U+FFFD) and re-escaped the way encoding/json escapes them, and numbers,
// true, false and null kept as written.
//
// appendCanonical writes that form directly, without building the decoded
// value: it is the effect's per-call hot path. FuzzCanonical checks it
// against the encoding/json round trip it replaces.

// ErrInvalid reports a value appendCanonical cannot handle; it is only
// reachable with text that json.Valid refused.
var ErrInvalid = errors.New("effect: backend value could not be canonicalised")

// Canonical returns the canonical form of the valid JSON text value in
// a fresh slice.
func Canonical(value []byte) ([]byte, error) {
	c := canonWriter{src: value}
	return c.all()
}

// ErrDuplicateKey reports an object with a key twice (by its decoded
// text) in text that must read one way only.
var ErrDuplicateKey = errors.New("effect: an object has a key twice")

// Strict is Canonical for text that must read one way
// only: an object with a key twice, at any depth, is ErrDuplicateKey
// (Canonical keeps the last, as encoding/json does; other readers keep
// the first).
func Strict(value []byte) ([]byte, error) {
	c := canonWriter{src: value, strict: true}
	out, err := c.all()
	if c.dup {
		return nil, ErrDuplicateKey
	}
	return out, err
}

// all returns the canonical form of the whole source.
func (c *canonWriter) all() ([]byte, error) {
	i := c.skipSpace(0)
	out, i, ok := c.value(make([]byte, 0, len(c.src)), i)
	if !ok || c.skipSpace(i) != len(c.src) {
		return nil, ErrInvalid
	}
	return out, nil
}

// Decode decodes canonical JSON text into the any a JSON Schema is
// checked against (objects as map[string]any, numbers as json.Number).
func Decode(canon []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, ErrInvalid
	}
	return v, nil
}

type canonWriter struct {
	src    []byte
	strict bool // a duplicate key fails (and sets dup)
	dup    bool
}

func (c *canonWriter) skipSpace(i int) int {
	for i < len(c.src) {
		switch c.src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value appends the canonical form of the value starting at i and returns
// the index just past it.
func (c *canonWriter) value(dst []byte, i int) ([]byte, int, bool) {
	if i >= len(c.src) {
		return dst, i, false
	}
	switch c.src[i] {
	case '{':
		return c.object(dst, i)
	case '[':
		return c.array(dst, i)
	case '"':
		end, ok := c.stringEnd(i)
		if !ok {
			return dst, i, false
		}
		var scratch [64]byte
		dec := unquote(scratch[:0], c.src[i:end])
		return jsonstr.Append(dst, dec), end, true
	default:
		end := i
		for end < len(c.src) {
			switch c.src[end] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return append(dst, c.src[i:end]...), end, end > i
			}
			end++
		}
		return append(dst, c.src[i:end]...), end, end > i
	}
}

func (c *canonWriter) array(dst []byte, i int) ([]byte, int, bool) {
	dst = append(dst, '[')
	i = c.skipSpace(i + 1)
	if i < len(c.src) && c.src[i] == ']' {
		return append(dst, ']'), i + 1, true
	}
	for {
		var ok bool
		if dst, i, ok = c.value(dst, i); !ok {
			return dst, i, false
		}
		i = c.skipSpace(i)
		if i >= len(c.src) {
			return dst, i, false
		}
		switch c.src[i] {
		case ',':
			dst = append(dst, ',')
			i = c.skipSpace(i + 1)
		case ']':
			return append(dst, ']'), i + 1, true
		default:
			return dst, i, false
		}
	}
}

// member is one key of an object: its decoded text and where its value
// starts in the source.
type member struct {
	key   []byte
	value int
}

func (c *canonWriter) object(dst []byte, i int) ([]byte, int, bool) {
	i = c.skipSpace(i + 1)
	if i < len(c.src) && c.src[i] == '}' {
		return append(dst, '{', '}'), i + 1, true
	}
	var small [16]member
	members := small[:0]
	for {
		if i >= len(c.src) || c.src[i] != '"' {
			return dst, i, false
		}
		end, ok := c.stringEnd(i)
		if !ok {
			return dst, i, false
		}
		key := unquote(nil, c.src[i:end])
		i = c.skipSpace(end)
		if i >= len(c.src) || c.src[i] != ':' {
			return dst, i, false
		}
		i = c.skipSpace(i + 1)
		members = append(members, member{key: key, value: i})
		if i, ok = c.skipValue(i); !ok {
			return dst, i, false
		}
		i = c.skipSpace(i)
		if i >= len(c.src) {
			return dst, i, false
		}
		if c.src[i] == '}' {
			i++
			break
		}
		if c.src[i] != ',' {
			return dst, i, false
		}
		i = c.skipSpace(i + 1)
	}
	// Stable, so that among equal keys the last one written is last.
	if len(members) <= len(small) {
		insertionSort(members)
	} else {
		slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	}
	dst = append(dst, '{')
	first := true
	for n, m := range members {
		if n+1 < len(members) && bytes.Equal(m.key, members[n+1].key) {
			if c.strict {
				c.dup = true
				return dst, i, false
			}
			continue // a later duplicate wins
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonstr.Append(dst, m.key)
		dst = append(dst, ':')
		var ok bool
		if dst, _, ok = c.value(dst, m.value); !ok {
			return dst, i, false
		}
	}
	return append(dst, '}'), i, true
}

func insertionSort(ms []member) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && bytes.Compare(ms[j-1].key, ms[j].key) > 0; j-- {
			ms[j-1], ms[j] = ms[j], ms[j-1]
		}
	}
}

// stringEnd returns the index just past the string starting at i.
func (c *canonWriter) stringEnd(i int) (int, bool) {
	for j := i + 1; j < len(c.src); j++ {
		switch c.src[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(c.src), false
}

// skipValue returns the index just past the value starting at i.
func (c *canonWriter) skipValue(i int) (int, bool) {
	if i >= len(c.src) {
		return i, false
	}
	switch c.src[i] {
	case '"':
		return c.stringEnd(i)
	case '{', '[':
		depth := 0
		for i < len(c.src) {
			switch c.src[i] {
			case '"':
				end, ok := c.stringEnd(i)
				if !ok {
					return i, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	default:
		end := i
		for end < len(c.src) {
			switch c.src[end] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return end, end > i
			}
			end++
		}
		return end, end > i
	}
}

// unquote appends the decoded text of the JSON string q (with its quotes)
// to dst, as encoding/json decodes it. When q needs no decoding it returns
// the inside of q itself, without copying; the caller must not modify the
// result.
func unquote(dst, q []byte) []byte {
	s := q[1 : len(q)-1]
	clean := true
	for i := 0; i < len(s); {
		b := s[i]
		if b == '\\' || b < ' ' {
			clean = false
			break
		}
		if b < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return s
	}
	for i := 0; i < len(s); {
		b := s[i]
		switch {
		case b == '\\' && i+1 < len(s):
			switch s[i+1] {
			case '"', '\\', '/', '\'':
				dst = append(dst, s[i+1])
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(s[i+2:])
				if r < 0 {
					return dst // unreachable for valid JSON
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r1 := hex4u(s[i:]); r1 >= 0 {
						if d := utf16.DecodeRune(r, r1); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst // unreachable for valid JSON
			}
			i += 2
		case b < utf8.RuneSelf:
			dst = append(dst, b)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
				i++
				continue
			}
			dst = append(dst, s[i:i+size]...)
			i += size
		}
	}
	return dst
}

// hex4 parses four hex digits at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// hex4u parses a "\uXXXX" escape at the start of s, or returns -1.
func hex4u(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	return hex4(s[2:])
}

// CompactLen returns the length of the valid JSON text value without its
// insignificant white space, without allocating.
func CompactLen(value []byte) int64 {
	var n int64
	inString, escaped := false, false
	for _, c := range value {
		switch {
		case inString:
			n++
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			n++
			if c == '"' {
				inString = true
			}
		}
	}
	return n
}

// PointerToken escapes s as a JSON Pointer reference token (RFC 6901).
func PointerToken(s string) string { return pointerEscaper.Replace(s) }

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// JSON returns the canonical form of v as encoding/json writes it.
func JSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonical(b)
}

// Digest returns "sha256:<hex>" of b, the form of every digest a receipt
// records.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DigestJSON returns the Digest of v's canonical JSON (JSON).
func DigestJSON(v any) (string, error) {
	text, err := JSON(v)
	if err != nil {
		return "", err
	}
	return Digest(text), nil
}
