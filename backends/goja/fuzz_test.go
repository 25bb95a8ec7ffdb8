package goja_test

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/spi"
)

// FuzzInputRoundTrip fuzzes the backend's value conversion: any valid
// JSON input, converted to a JavaScript value and written back by the
// script "input", must come back as the same JSON value (numbers compared
// as float64, a number beyond float64 as null, which is how JSON writes
// Infinity), and the run must be OK: never a crash, an engine failure or
// text that is not JSON.
//
//	go test -run '^$' -fuzz FuzzInputRoundTrip -fuzztime 10s ./backends/goja
func FuzzInputRoundTrip(f *testing.F) {
	for _, seed := range []string{
		`null`, `true`, `0`, `-0`, `1e400`, `-1e400`, `1e-400`, `9007199254740993`, `1.7976931348623157e308`,
		`""`, `"\ud800"`, `"\u2028\u0000\\\""`, `"😀"`, `[]`, `{}`, `[1,"a",{"b":[true,false,null]}]`,
		`{"__proto__":{"x":1}}`, `{"a":1,"a":2}`, `{"1":1,"a":2,"0":3}`, `{"constructor":null,"toString":1}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100), " [ 1 , 2 ] ",
	} {
		f.Add([]byte(seed))
	}
	b, err := goja.New(nil)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // the effect hands a backend valid JSON only
		}
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("input"), Input: in, Limits: spi.Limits{WallClock: time.Minute}})
		require.NoError(t, err)
		require.Equal(t, spi.KindOK, out.Kind, "%v %s", out.Kind, out.Message)
		require.True(t, json.Valid(out.Value), "not JSON: %q", out.Value)
		assert.Equal(t, jsonValue(t, in), jsonValue(t, out.Value), "input %q gave %q", in, out.Value)
	})
}

// jsonValue decodes text into a comparable value: numbers as float64,
// and a number beyond float64 as nil (JSON null).
func jsonValue(t *testing.T, text []byte) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(string(text)))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	return normalize(v)
}

func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		if math.IsInf(f, 0) {
			return nil
		}
		return f
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k])
		}
	}
	return v
}
