package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// jsonFlag is the value of a flag that holds JSON text (--input). It
// records whether the flag was given, so that an empty value given on the
// command line (--input "") is refused as invalid JSON, like every other
// malformed input, instead of being taken for the absent flag (null).
type jsonFlag struct {
	text string
	set  bool
}

// Set implements pflag.Value.
func (f *jsonFlag) Set(s string) error {
	f.text, f.set = s, true
	return nil
}

// String implements pflag.Value.
func (f *jsonFlag) String() string { return f.text }

// Type implements pflag.Value.
func (f *jsonFlag) Type() string { return "JSON" }

// checkJSON returns nil when b is one JSON value, else an error that says
// where it went wrong, as line:column (both from 1; the column counts
// characters) and what encoding/json found there.
func checkJSON(b []byte) error {
	if json.Valid(b) {
		return nil
	}
	var raw json.RawMessage
	err := json.Unmarshal(b, &raw)
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return fmt.Errorf("invalid JSON")
	}
	offset := syn.Offset
	if syn.Error() == "unexpected end of JSON input" {
		offset = int64(len(b)) + 1 // after the last character
	}
	line, col := position(b, offset)
	return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, syn.Error())
}

// position turns encoding/json's offset (the bytes read, the bad one
// included) into a line and a column.
func position(b []byte, offset int64) (line, col int) {
	off := int(min(max(offset, 1), int64(len(b))))
	if len(b) == 0 {
		return 1, 1
	}
	before := b[:off-1]
	line = 1 + bytes.Count(before, []byte("\n"))
	start := bytes.LastIndexByte(before, '\n') + 1
	if offset > int64(len(b)) { // the end of the text
		return line, utf8.RuneCount(b[start:]) + 1
	}
	return line, utf8.RuneCount(before[start:]) + 1
}

// readBounded reads at most maxFileBytes from r.
func readBounded(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", what, maxFileBytes)
	}
	return b, nil
}
