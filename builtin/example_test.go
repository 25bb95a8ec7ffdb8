package builtin_test

import (
	"fmt"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/registry"
)

// Register the built-in engines in a registry the program owns, then pick
// one by language. (Which engines are registered depends on the build:
// quickjs-wasmtime needs cgo; the defaults do not.)
func ExampleRegister() {
	var r registry.Registry
	builtin.Register(&r)
	for _, lang := range []string{"javascript", "starlark", "wasm"} {
		e, err := r.Default(lang)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(lang, "default:", e.Engine)
	}
	// Output:
	// javascript default: quickjs
	// starlark default: starlark-wasm
	// wasm default: extism
}
