//go:build cgo

package wasmtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestSyntaxErrorPosition: an indented syntax error, on line 1 and
// further down, with and without top-level await, is reported at the
// user's column (the offending token's, as goja reports it).
func TestSyntaxErrorPosition(t *testing.T) {
	for _, tc := range []struct{ script, message string }{
		{"    foo(;", "unexpected token in expression: ';' (line 1, column 9)"},
		{"1;\n    foo(;", "unexpected token in expression: ';' (line 2, column 9)"},
		{"    await 1; foo(;", "unexpected token in expression: ';' (line 1, column 18)"},
		{"await 1;\n    foo(;", "unexpected token in expression: ';' (line 2, column 9)"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			out, err := eval(t, shared(t), tc.script, "", spi.Limits{})
			require.NoError(t, err)
			assert.Equal(t, spi.Threw("SyntaxError", tc.message), out)
		})
	}
}

// TestGlobalDeclarations: a script is a classic global script: a
// top-level var is a non-deletable property of globalThis, under "use
// strict" too; let is a global lexical binding, not a property.
func TestGlobalDeclarations(t *testing.T) {
	for script, want := range map[string]string{
		"var x = 1; delete x":                    `false`,
		`"use strict"; var y = 2; globalThis.y`:  `2`,
		"let a = 1; [a, 'a' in globalThis]":      `[1,false]`,
		`"use strict"; function f() {} typeof f`: `"function"`,
	} {
		t.Run(script, func(t *testing.T) {
			out, err := eval(t, shared(t), script, "", spi.Limits{})
			require.NoError(t, err)
			assert.Equal(t, spi.OK([]byte(want)), out)
		})
	}
}
