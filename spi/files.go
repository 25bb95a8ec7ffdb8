package spi

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// File is one file crossing into or out of a run (SPI 1.5.0): an input
// file the caller hands the script ([Request].Files), or an output file
// the script wrote ([Outcome].Files). Its name is flat and checked by
// [CheckFileName]; its bytes are opaque.
type File struct {
	// Name is the file's name, without a directory.
	Name string `json:"name"`
	// Data is the file's content.
	Data []byte `json:"data"`
}

// MaxFileNameBytes bounds a file's name.
const MaxFileNameBytes = 128

// ErrFileName is the error CheckFileName wraps.
var ErrFileName = errors.New("spi: invalid file name")

// CheckFileName reports an error wrapping [ErrFileName] unless name is a
// flat, portable file name: 1 to [MaxFileNameBytes] bytes of ASCII
// letters, digits, '.', '_' and '-', beginning with a letter or a digit.
// So no name is a path ("../x", "/etc/passwd", "a/b"), a hidden file, "."
// or "..", or holds a NUL, a control character, a backslash or a byte a
// file system on some other system would read differently. Every engine
// and door checks names with it, for input files and for the names a
// script writes, so that one rule holds everywhere.
func CheckFileName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrFileName)
	}
	if len(name) > MaxFileNameBytes {
		return fmt.Errorf("%w: %d bytes, past %d", ErrFileName, len(name), MaxFileNameBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return fmt.Errorf("%w: %s at byte %d", ErrFileName, describeByte(name, i), i)
		}
	}
	return nil
}

// describeByte names the offending character of name at i without
// copying untrusted bytes into the error text.
func describeByte(name string, i int) string {
	r, _ := utf8.DecodeRuneInString(name[i:])
	if r == utf8.RuneError || r < 0x20 || r == 0x7f {
		return fmt.Sprintf("byte 0x%02x", name[i])
	}
	return fmt.Sprintf("%q", r)
}
