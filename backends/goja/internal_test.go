package goja

import (
	"strings"
	"testing"

	js "github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

func TestSourceNesting(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"", 0},
		{"1 + 2", 0},
		{"f(a[0], {b: [1]})", 3},
		{"(((", 3},
		{")))(", 1},          // never below zero
		{`"(((" + ")"`, 3},   // strings count too: conservative
		{"/* ( */ x", 1},     // and comments
		{"a\n(\n[\n]\n)", 2}, // newlines are nothing special
	} {
		assert.Equal(t, tc.want, sourceNesting([]byte(tc.src), 100), tc.src)
	}
	// It stops counting past the limit.
	assert.Equal(t, 11, sourceNesting([]byte(strings.Repeat("(", 1000)), 10))
}

func TestJSONNesting(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"1", 0},
		{`{"a":[1,{"b":[]}]}`, 4},
		{`"[[[["`, 0},
		{`["\"[[["]`, 1},
		{`["\\", [[]]]`, 3},
		{`]]]][`, 1},
		{`["unterminated [[[`, 1},
	} {
		assert.Equal(t, tc.want, jsonNesting(tc.text, 100), tc.text)
		assert.Equal(t, tc.want, jsonNesting([]byte(tc.text), 100), tc.text)
	}
	assert.Equal(t, 11, jsonNesting(strings.Repeat("[", 1000), 10))
}

func TestEnginePanicIsInfrastructure(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	r, err := b.(*backend).newRun(spi.Request{Script: []byte("1"), Input: []byte("null")})
	require.NoError(t, err)
	r.parse = func(js.Value, ...js.Value) (js.Value, error) { panic("engine bug") }
	assert.Equal(t, spi.Infrastructure("goja: the engine panicked"), r.exec())

	// A panic inside the script's run (in a native function goja calls).
	r, err = b.(*backend).newRun(spi.Request{Script: []byte("boom()"), Input: []byte("null")})
	require.NoError(t, err)
	require.NoError(t, r.rt.Set("boom", func(js.FunctionCall) js.Value { panic("engine bug") }))
	assert.Equal(t, spi.Infrastructure("goja: the engine panicked"), r.exec())
}
