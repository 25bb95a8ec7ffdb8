package jsfront

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSyntaxErrorAt(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		line, column int
		ok           bool
	}{
		{"indented on line 1", "    foo(;", 1, 9, true},
		{"indented on line 2", "1;\n    foo(;", 2, 9, true},
		{"with top-level await, on line 1", "    await 1; foo(;", 1, 18, true},
		{"with top-level await, on line 2", "await 1;\n    foo(;", 2, 9, true},
		{"in a for await loop's body", "for await (const x of []) { foo(; }", 1, 33, true},
		{"a script that parses", "var x = 1; x", 0, 0, false},
		{"past the nesting bound", strings.Repeat("(", MaxNesting+1), 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, column, ok := SyntaxErrorAt([]byte(tc.script))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.line, line)
			assert.Equal(t, tc.column, column)
		})
	}
}
