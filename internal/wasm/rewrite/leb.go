package rewrite

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every error about a module that is not
// well-formed WebAssembly.
var ErrMalformed = errors.New("rewrite: malformed module")

// ErrUnsupported is wrapped by every error about a module that uses a
// feature the rewriter does not understand (and so refuses, rather than
// leave a check out).
var ErrUnsupported = errors.New("rewrite: unsupported feature")

// reader reads the binary format's primitives from b; the first error
// sticks and every later read returns zero values.
type reader struct {
	b   []byte
	off int // offset of b[0] in the section or body, for messages
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at offset %d", ErrMalformed, fmt.Sprintf(format, args...), r.off)
	}
}

func (r *reader) unsupported(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at offset %d", ErrUnsupported, fmt.Sprintf(format, args...), r.off)
	}
}

func (r *reader) done() bool { return r.err != nil || len(r.b) == 0 }

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	r.off++
	return c
}

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) {
		r.fail("truncated")
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	r.off += int(n)
	return out
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if shift >= bits {
			r.fail("integer too long")
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if bits < 64 && v>>bits != 0 {
				r.fail("integer too large")
				return 0
			}
			return v
		}
	}
}

func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }

// sleb reads a signed LEB128 of at most bits bits.
func (r *reader) sleb(bits uint) int64 {
	var v int64
	for shift := uint(0); ; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if shift >= bits {
			r.fail("integer too long")
			return 0
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift+7 < 64 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v
		}
	}
}

func (r *reader) name() string { return string(r.bytes(r.u32())) }

// appendU32 appends v as an unsigned LEB128.
func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// appendU32Width appends v as an unsigned LEB128 of width bytes (padded
// with continuation bytes, as some toolchains write sizes) when v fits in
// that many, else at its shortest: a width of 0 or 1 is the shortest form.
func appendU32Width(b []byte, v uint32, width int) []byte {
	if width <= 1 || width > 5 || (width < 5 && v>>(7*uint(width)) != 0) {
		return appendU32(b, v)
	}
	for i := 0; i < width-1; i++ {
		b = append(b, byte(v&0x7f)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendS64 appends v as a signed LEB128.
func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}
