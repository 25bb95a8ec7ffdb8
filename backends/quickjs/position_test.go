package quickjs

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gojab "github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/spi"
)

// syntaxPositions are indented syntax errors, on line 1 and further down,
// with and without top-level await: the position is the user's (the
// column of the offending token, as goja reports it), never QuickJS's
// own column, nor one counted in the front end's async wrapper.
var syntaxPositions = []struct {
	name, script, message string
	gojaOff               bool // goja's own column is off (see TestAgreesWithGoja)
}{
	{"indented on line 1", "    foo(;", "unexpected token in expression: ';' (line 1, column 9)", false},
	{"indented on line 2", "1;\n    foo(;", "unexpected token in expression: ';' (line 2, column 9)", false},
	{"tab-indented on line 3", "1;\n2;\n\t\tfoo(;", "unexpected token in expression: ';' (line 3, column 7)", false},
	{"top-level await, on line 1", "    await 1; foo(;", "unexpected token in expression: ';' (line 1, column 18)", true},
	{"top-level await, on line 2", "await 1;\n    foo(;", "unexpected token in expression: ';' (line 2, column 9)", false},
}

func TestSyntaxErrorPosition(t *testing.T) {
	for mode, b := range map[string]*Backend{"parked": shared(t), "fresh": newBackend(t, &Options{Mode: ModeFresh})} {
		for _, tc := range syntaxPositions {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				assert.Equal(t, spi.Threw("SyntaxError", tc.message), eval(t, b, tc.script, "", spi.Limits{}))
			})
		}
	}
}

// globalScripts: a script is a classic global script, as on goja: a
// top-level var or function declaration is a non-deletable property of
// globalThis, under "use strict" too; let, const and class are global
// lexical bindings, not properties.
var globalScripts = []struct {
	name, script, want string
}{
	{"var is not deletable", "var x = 1; delete x", `false`},
	{"var is a property of globalThis under use strict", `"use strict"; var y = 2; globalThis.y`, `2`},
	{"function is a property of globalThis under use strict", `"use strict"; function f() {} typeof globalThis.f`, `"function"`},
	{"var's property is not configurable", `var z = 1; Object.getOwnPropertyDescriptor(globalThis, "z").configurable`, `false`},
	{"let, const and class are not properties", "let a = 1; const b = 2; class C {} [a, b, typeof C, 'a' in globalThis, 'b' in globalThis, 'C' in globalThis]", `[1,2,"function",false,false,false]`},
}

func TestGlobalDeclarations(t *testing.T) {
	for mode, b := range map[string]*Backend{"parked": shared(t), "fresh": newBackend(t, &Options{Mode: ModeFresh})} {
		for _, tc := range globalScripts {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				assert.Equal(t, spi.OK([]byte(tc.want)), eval(t, b, tc.script, "", spi.Limits{}))
			})
		}
	}
}

// TestAgreesWithGoja: the goja backend and this one agree on the global
// declarations and on where a syntax error is. (goja's column on line 1
// of a script with top-level await counts the front end's async wrapper,
// jsfront.Prefix: that case is left out.)
func TestAgreesWithGoja(t *testing.T) {
	g, err := gojab.New(nil)
	require.NoError(t, err)
	run := func(t *testing.T, script string) spi.Outcome {
		out, err := g.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte("null")})
		require.NoError(t, err)
		return out
	}
	b := shared(t)
	for _, tc := range globalScripts {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, run(t, tc.script), eval(t, b, tc.script, "", spi.Limits{}))
		})
	}
	for _, tc := range syntaxPositions {
		if tc.gojaOff {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			ours := eval(t, b, tc.script, "", spi.Limits{})
			var line, column int
			_, err := fmt.Sscanf(ours.Message[strings.LastIndex(ours.Message, "(line "):], "(line %d, column %d)", &line, &column)
			require.NoError(t, err, ours.Message)
			assert.Contains(t, run(t, tc.script).Message, fmt.Sprintf("Line %d:%d ", line, column))
		})
	}
}
