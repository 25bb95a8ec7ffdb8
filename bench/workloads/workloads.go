package workloads

import (
	_ "embed"
	"slices"
)

//go:generate wat2wasm reshape.wat -o reshape.wasm

var (
	//go:embed reshape.js
	reshapeJS []byte
	//go:embed reshape.ts
	reshapeTS []byte
	//go:embed reshape.star
	reshapeStar []byte
	//go:embed reshape.py
	reshapePy []byte
	//go:embed reshape.wasm
	reshapeWasm []byte
	//go:embed reshape.expected.json
	reshapeExpected []byte
)

// Reshape returns the reshape workload written in language ("javascript",
// "python", "starlark", "typescript" or "wasm"), and false for any other language. The bytes are
// a fresh copy the caller owns.
func Reshape(language string) ([]byte, bool) {
	switch language {
	case "javascript":
		return slices.Clone(reshapeJS), true
	case "python":
		return slices.Clone(reshapePy), true
	case "starlark":
		return slices.Clone(reshapeStar), true
	case "typescript":
		return slices.Clone(reshapeTS), true
	case "wasm":
		return slices.Clone(reshapeWasm), true
	default:
		return nil, false
	}
}

// ReshapeExpected returns the JSON text every reshape translation must
// evaluate to: the result of reshape.js. Compare decoded values, not
// bytes: engines may spell the same number differently (4417500 and
// 4417500.0).
func ReshapeExpected() []byte { return slices.Clone(reshapeExpected) }

// Languages lists the languages Reshape has a translation for, sorted.
func Languages() []string { return []string{"javascript", "python", "starlark", "typescript", "wasm"} }
