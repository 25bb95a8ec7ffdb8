package goja_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestInputConversion: the caller's JSON becomes the value JSON.parse
// would build. A number beyond float64 is ±Infinity, as in JavaScript and
// on the QuickJS backend (goja's own JSON.parse refused it, and the run
// ended untyped).
func TestInputConversion(t *testing.T) {
	b := newBackend(t, nil)
	for _, tc := range []struct{ name, script, input, want string }{
		{"1e400 is Infinity", "[input === Infinity, typeof input]", "1e400", `[true,"number"]`},
		{"-1e400 is -Infinity", "input === -Infinity", "-1e400", `true`},
		{"Infinity is written as null, as QuickJS writes it", "input", "1e400", `null`},
		{"inside an array", "input", "[1e400,-1E+999,1]", `[null,null,1]`},
		{"underflow is zero", "[input[0] === 0, 1 / input[1]]", "[1e-400,-1e-400]", `[true,null]`},
		{"the largest float64", "input", "1.7976931348623157e308", `1.7976931348623157e+308`},
		{"integers", "input", "[0,-0,9007199254740993,123456789012345678901234567890]", `[0,0,9007199254740992,1.2345678901234568e+29]`},
		{"__proto__ is an own key", `[Object.keys(input), Object.getPrototypeOf(input) === Object.prototype, input.__proto__]`, `{"__proto__":{"x":1}}`, `[["__proto__"],true,{"x":1}]`},
		{"the last duplicate wins, in the first one's place", "input", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"strings", "input", `["\u00e9\n\"\\", "😀", "\u2028"]`, "[\"é\\n\\\"\\\\\",\"😀\",\"\u2028\"]"},
		{"objects are plain and extensible", `input.x.y = 1; [input.x.y, Object.isExtensible(input), Array.isArray(input.a)]`, `{"x":{},"a":[]}`, `[1,true,true]`},
		{"white space", "input", " \n\t[ 1 , { \"a\" : null } ] \n", `[1,{"a":null}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, spi.OK(json.RawMessage(tc.want)), eval(t, b, tc.script, tc.input, spi.Limits{}))
		})
	}
}

// TestInputInfinityThroughTheEffect: the input the issue reported
// untyped, as a user sends it.
func TestInputInfinityThroughTheEffect(t *testing.T) {
	for in, want := range map[string]string{"1e400": `[null,true]`, "-1e400": `[null,false]`} {
		out, err := evalEffect(t, "[input, input > 0]", json.RawMessage(in))
		require.NoError(t, err, in)
		assert.JSONEq(t, want, string(out), in)
	}
}

// TestDeepResultIsText: a result nested past 10,000 levels is handed over
// as its JSON text (deciding what is too deep is the effect's job), not
// as an engine failure.
func TestDeepResultIsText(t *testing.T) {
	b := newBackend(t, nil)
	for _, depth := range []int{10001, 20000} {
		out := eval(t, b, "var a = []; for (var i = 1; i < input; i++) a = [a]; a", itoa(depth), spi.Limits{})
		assert.Equal(t, spi.OK(json.RawMessage(strings.Repeat("[", depth)+strings.Repeat("]", depth))), out)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
