package starlark

import (
	"fmt"

	sljson "go.starlark.net/lib/json"
	slmath "go.starlark.net/lib/math"
	sl "go.starlark.net/starlark"
	slstruct "go.starlark.net/starlarkstruct"
)

// newPredeclared returns the names every script sees besides Starlark's
// universal built-ins: the json and math modules of go.starlark.net, with
// json.decode guarded against deep nesting.
func newPredeclared() sl.StringDict {
	lib := sljson.Module.Members
	decode := lib["decode"]
	return sl.StringDict{
		"json": &slstruct.Module{
			Name: "json",
			Members: sl.StringDict{
				"encode":        lib["encode"],
				"encode_indent": lib["encode_indent"],
				"indent":        lib["indent"],
				"decode": sl.NewBuiltin("json.decode", func(thread *sl.Thread, b *sl.Builtin, args sl.Tuple, kwargs []sl.Tuple) (sl.Value, error) {
					if len(args) > 0 {
						if s, ok := sl.AsString(args[0]); ok && jsonDepth(s) > maxDepth {
							return nil, fmt.Errorf("%s: JSON text nests deeper than %d", b.Name(), maxDepth)
						}
					}
					return sl.Call(thread, decode, args, kwargs)
				}),
			},
		},
		"math": slmath.Module,
	}
}

// jsonDepth returns the deepest nesting of arrays and objects in s, read
// as JSON text (brackets inside strings do not count). go.starlark.net's
// json.decode recurses once per level without a limit, so a few steps of
// Starlark ("[" * 3000000 + …) would otherwise overflow the goroutine
// stack, which is fatal to the whole process.
func jsonDepth(s string) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
