package starlark

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	sl "go.starlark.net/starlark"
)

// maxDepth bounds the nesting of the input (and of json.decode's text):
// encoding/json's nesting limit, which the effect's input check applies
// too.
const maxDepth = 10000

// maxResultDepth bounds the nesting of a result while it is encoded, to
// keep the encoder's recursion within the goroutine stack. A result nested
// deeper than the effect accepts (10,000) is encoded all the same and
// handed over as text: the effect refuses it with a typed output limit
// naming the depth, the rule for every engine. 1,000,000 is far past what
// the default step budget can build (a level costs a few steps).
const maxResultDepth = 1_000_000

// errInputSyntax marks input that is not one JSON value.
var errInputSyntax = errors.New("starlark: input is not a single JSON value")

// decodeInput converts JSON text to a fresh Starlark value. Objects become
// dicts whose keys keep the order of the text; integers of any size become
// exact Ints; other numbers become Floats; invalid UTF-8 and lone surrogate
// escapes become U+FFFD (encoding/json's behaviour).
func decodeInput(text []byte) (sl.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errInputSyntax
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (sl.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInputSyntax, err)
	}
	switch t := tok.(type) {
	case nil:
		return sl.None, nil
	case bool:
		return sl.Bool(t), nil
	case string:
		return sl.String(t), nil
	case json.Number:
		return decodeNumber(string(t))
	case json.Delim:
		if depth >= maxDepth {
			return nil, fmt.Errorf("starlark: input nests deeper than %d", maxDepth)
		}
		switch t {
		case '[':
			var elems []sl.Value
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				elems = append(elems, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, fmt.Errorf("%w: %v", errInputSyntax, err)
			}
			return sl.NewList(elems), nil
		case '{':
			d := sl.NewDict(0)
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("%w: %v", errInputSyntax, err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errInputSyntax
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				// A duplicate key keeps the last value, as encoding/json does.
				if err := d.SetKey(sl.String(k), v); err != nil {
					return nil, fmt.Errorf("starlark: building input dict: %w", err)
				}
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, fmt.Errorf("%w: %v", errInputSyntax, err)
			}
			return d, nil
		}
	}
	return nil, errInputSyntax
}

// decodeNumber keeps integers exact, whatever their size, and makes every
// other number a Float (an exponent or a fraction makes a Float even when
// the value is integral, as in Python).
func decodeNumber(s string) (sl.Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return sl.MakeInt64(n), nil
		}
		var b big.Int
		if _, ok := b.SetString(s, 10); !ok {
			return nil, errInputSyntax
		}
		return sl.MakeBigInt(&b), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, errInputSyntax
	}
	// Out of range: ±Inf or ±0, as strconv rounds; the script sees them.
	return sl.Float(f), nil
}

// encodeError is a result the script returned that has no JSON form. It
// is the script's doing, so it is reported as a thrown error.
type encodeError struct{ msg string }

func (e *encodeError) Error() string { return e.msg }

// errStopped means the encoder was stopped because the run ended (wall
// clock or cancellation) while it was working.
var errStopped = errors.New("starlark: encoding stopped")

// encoder turns a Starlark value into JSON text.
type encoder struct {
	buf      []byte
	max      int           // most bytes of JSON text produced
	stop     *atomic.Int32 // non-zero: stop (checked every few values)
	count    int
	visiting map[any]struct{} // lists and dicts on the current path
}

func encodeResult(v sl.Value, maxBytes int, stop *atomic.Int32) ([]byte, error) {
	e := &encoder{max: maxBytes, stop: stop}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	if len(e.buf) > e.max {
		return nil, &encodeError{fmt.Sprintf("result is larger than %d bytes as JSON", e.max)}
	}
	return e.buf, nil
}

func (e *encoder) value(v sl.Value, depth int) error {
	e.count++
	if e.count&1023 == 0 && e.stop != nil && e.stop.Load() != 0 {
		return errStopped
	}
	if len(e.buf) > e.max {
		return &encodeError{fmt.Sprintf("result is larger than %d bytes as JSON", e.max)}
	}
	switch x := v.(type) {
	case sl.NoneType:
		e.buf = append(e.buf, "null"...)
	case sl.Bool:
		e.buf = strconv.AppendBool(e.buf, bool(x))
	case sl.Int:
		if n, ok := x.Int64(); ok {
			e.buf = strconv.AppendInt(e.buf, n, 10)
		} else {
			e.buf = x.BigInt().Append(e.buf, 10)
		}
	case sl.Float:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return &encodeError{"result holds a non-finite float, which JSON cannot represent"}
		}
		e.buf = appendFloat(e.buf, f)
	case sl.String:
		e.buf = appendString(e.buf, string(x))
	case *sl.List:
		if err := e.enter(x, depth); err != nil {
			return err
		}
		e.buf = append(e.buf, '[')
		for i := range x.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(x.Index(i), depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
		delete(e.visiting, x)
	case sl.Tuple:
		if depth >= maxResultDepth {
			return e.tooDeep()
		}
		e.buf = append(e.buf, '[')
		for i, elem := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(elem, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case *sl.Dict:
		if err := e.enter(x, depth); err != nil {
			return err
		}
		e.buf = append(e.buf, '{')
		first := true
		for k, val := range x.Entries() {
			ks, ok := k.(sl.String)
			if !ok {
				return &encodeError{fmt.Sprintf("result holds a dict key of type %s; JSON object keys must be strings", k.Type())}
			}
			if !first {
				e.buf = append(e.buf, ',')
			}
			first = false
			e.buf = appendString(e.buf, string(ks))
			e.buf = append(e.buf, ':')
			if err := e.value(val, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
		delete(e.visiting, x)
	default:
		return &encodeError{fmt.Sprintf("result holds a value of type %s, which has no JSON form", v.Type())}
	}
	return nil
}

// enter records a mutable container on the current path, refusing cycles
// and excessive depth.
func (e *encoder) enter(c any, depth int) error {
	if depth >= maxResultDepth {
		return e.tooDeep()
	}
	if e.visiting == nil {
		e.visiting = make(map[any]struct{})
	}
	if _, ok := e.visiting[c]; ok {
		return &encodeError{"result contains itself (a cycle), which JSON cannot represent"}
	}
	e.visiting[c] = struct{}{}
	return nil
}

func (e *encoder) tooDeep() error {
	return &encodeError{fmt.Sprintf("result nests deeper than %d", maxResultDepth)}
}

// appendFloat appends a finite f as the shortest JSON number that reads
// back as f, spelled as JavaScript spells numbers: plain decimals from
// 1e-6 up to 1e21, an exponent outside (1e+21, 1e-7), so that integral
// values read as integers (2.0 is 2, -0.0 is 0).
func appendFloat(buf []byte, f float64) []byte {
	if f == 0 {
		// Negative zero too, as JavaScript writes it: "-0" would read back
		// as the integer 0, a different value (found by FuzzConvert).
		return append(buf, '0')
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		start := len(buf)
		buf = strconv.AppendFloat(buf, f, 'e', -1, 64)
		// strconv writes a two-digit exponent ("1e-07"); drop the zero.
		if n := len(buf); n-start >= 4 && buf[n-4] == 'e' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
		return buf
	}
	return strconv.AppendFloat(buf, f, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 (including the
// three-byte encodings of lone surrogates) becomes U+FFFD; control
// characters, quote and backslash are escaped; everything else is written
// as UTF-8.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, "\ufffd"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
