package goja

import (
	"context"
	"strings"
	"testing"
	"time"

	js "github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/jsfront"
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
		assert.Equal(t, tc.want, jsfront.Nesting([]byte(tc.src), 100), tc.src)
	}
	// It stops counting past the limit.
	assert.Equal(t, 11, jsfront.Nesting([]byte(strings.Repeat("(", 1000)), 10))
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
	r, err := b.newRun(spi.Request{Script: []byte("1"), Input: []byte("null")})
	require.NoError(t, err)
	r.decode = func() (js.Value, error) { panic("engine bug") }
	assert.Equal(t, spi.Infrastructure("goja: the engine panicked"), r.exec())

}

// TestEnginePanicInTheScriptIsThrown: a panic of goja while it compiles or
// runs the script is the script's doing (it fails the same way every
// time), a thrown InternalError the effect reports as a typed, final
// scriptError, never a retryable infrastructure failure.
func TestEnginePanicInTheScriptIsThrown(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	for _, script := range []string{"boom()", "try { boom() } catch (e) { 1 }", "({ toJSON() { return boom() } })"} {
		r, err := b.newRun(spi.Request{Script: []byte(script), Input: []byte("null")})
		require.NoError(t, err)
		require.NoError(t, r.rt.Set("boom", func(js.FunctionCall) js.Value { panic("engine bug") }))
		assert.Equal(t, spi.Threw("InternalError", msgEngineFailed), r.exec(), script)
	}
}

// TestLateValueIsTheWallClockLimit: a run that finished after its wall
// clock never delivers its value, even when the timer did not fire first
// (here it never fires, as on a machine too busy to run it in time).
func TestLateValueIsTheWallClockLimit(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	b.timer = func(time.Duration) (<-chan time.Time, func() bool) { return nil, func() bool { return true } }
	slow := []byte(`var s = ""; for (var i = 0; i < 200; i++) s = "x".repeat(1e5) + i; s.length`)
	out, err := b.Evaluate(context.Background(), spi.Request{Script: slow, Input: []byte("null"), Limits: spi.Limits{WallClock: time.Nanosecond}})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)

	out, err = b.Evaluate(context.Background(), spi.Request{Script: slow, Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte("100003")), out)
}
