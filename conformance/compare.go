package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strings"
)

// richInput is rich_value's input: astral characters, every kind of
// escape, integers past 2^31 and at 2^53-1, negative, fractional and tiny
// numbers, and a value nested 100 deep.
func richInput() []byte {
	var b strings.Builder
	b.WriteString(`{"astral":"😀 𝄞 \ud83d\ude00",`)
	b.WriteString(`"escapes":"\"\\\n\t\r\b\f\/\u0000\u001f\u2028\u2029",`)
	b.WriteString(`"bmp":"é ü 中文 ✓",`)
	b.WriteString(`"pastInt32":2147483649,"maxSafe":9007199254740991,"minSafe":-9007199254740991,`)
	b.WriteString(`"negative":-42,"fraction":3.25,"tiny":1e-7,"zero":0,`)
	b.WriteString(`"literals":[true,false,null],"empty":{"object":{},"array":[],"string":""},`)
	b.WriteString(`"nested":`)
	// 100 levels: objects and arrays alternating, a string at the bottom.
	const depth = 100
	for i := range depth {
		if i%2 == 0 {
			b.WriteString(`{"d":`)
		} else {
			b.WriteString(`[`)
		}
	}
	b.WriteString(`"bottom 😀"`)
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// jsonDiff compares two JSON texts as values and describes the first
// difference, or returns "" when they are equal.
//
// Both are decoded with UseNumber, so no number goes through float64;
// numbers are equal when their decimal texts denote the same rational
// (big.Rat), so 1e-7, 1E-7 and 0.0000001 are equal and 9007199254740991 is
// not 9007199254740992. Strings are compared after JSON unescaping, so
// "\u00e9" equals "é"; object keys are compared as sets.
func jsonDiff(want, got []byte) string {
	w, err := decodeExact(want)
	if err != nil {
		return fmt.Sprintf("the kit's own value does not decode: %v", err)
	}
	g, err := decodeExact(got)
	if err != nil {
		return fmt.Sprintf("the result is not one JSON value: %v (%s)", err, clip(string(got)))
	}
	return diffValue("$", w, g)
}

func decodeExact(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the value")
	}
	return v, nil
}

func diffValue(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("at %s: want an object, got %s", path, show(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("at %s: key %q is missing", path, k)
			}
			if d := diffValue(path+"."+k, w[k], gv); d != "" {
				return d
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("at %s: unexpected key %q", path, k)
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("at %s: want an array, got %s", path, show(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("at %s: want %d elements, got %d", path, len(w), len(g))
		}
		for i := range w {
			if d := diffValue(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return fmt.Sprintf("at %s: want the number %s, got %s", path, w, show(got))
		}
		wr, wok := new(big.Rat).SetString(string(w))
		gr, gok := new(big.Rat).SetString(string(g))
		if !wok || !gok || wr.Cmp(gr) != 0 {
			return fmt.Sprintf("at %s: want the number %s, got %s", path, w, g)
		}
		return ""
	case string:
		g, ok := got.(string)
		if !ok || g != w {
			return fmt.Sprintf("at %s: want the string %s, got %s", path, show(w), show(got))
		}
		return ""
	default: // bool or nil
		if got != want {
			return fmt.Sprintf("at %s: want %s, got %s", path, show(want), show(got))
		}
		return ""
	}
}

// show renders a decoded value as short JSON evidence.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return clip(string(b))
}

// keyOrderDiff compares the order of object keys in two JSON texts that
// hold the same value (jsonDiff already passed), reading both as token
// streams, and describes the first object whose keys come back in another
// order, or returns "".
func keyOrderDiff(want, got []byte) string {
	w, err := keySequence(want)
	if err != nil {
		return "the kit's own value does not tokenize: " + err.Error()
	}
	g, err := keySequence(got)
	if err != nil {
		return "the result does not tokenize: " + err.Error()
	}
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("key %d (in document order) is %q, want %q", i, clip(g[i]), clip(w[i]))
		}
	}
	if len(w) != len(g) {
		return fmt.Sprintf("%d keys, want %d", len(g), len(w))
	}
	return ""
}

// keySequence lists every object key of a JSON text in document order.
func keySequence(b []byte) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var keys []string
	var walk func() error
	walk = func() error {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return err
				}
				keys = append(keys, k.(string))
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = d.Token()
			return err
		case json.Delim('['):
			for d.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = d.Token()
			return err
		}
		return nil
	}
	if err := walk(); err != nil {
		return nil, err
	}
	return keys, nil
}
