package effect

import (
	"bytes"
	"encoding/json"
	"errors"
)

// canonicalize decodes the valid JSON text value (numbers as json.Number,
// so their text is kept exactly) and re-encodes it compact, with object
// keys sorted, strings re-escaped by encoding/json without HTML escaping
// and no trailing newline. It returns the decoded value (for the shape
// check) and the canonical bytes, which the caller owns. A duplicate object
// key keeps its last value; invalid UTF-8 in a string becomes U+FFFD.
func canonicalize(value []byte) (any, []byte, error) {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, errors.New("effect: backend value could not be decoded")
	}
	var buf bytes.Buffer
	buf.Grow(len(value) + 1)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, nil, errors.New("effect: backend value could not be re-encoded")
	}
	out := buf.Bytes()
	return v, out[:len(out)-1], nil // Encode appends '\n'
}

// compactLen returns the length of the valid JSON text value without its
// insignificant white space, without allocating.
func compactLen(value []byte) int64 {
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
