package builtin_test

import (
	"fmt"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/registry"
)

// Register the built-in engines in a registry the program owns, then pick
// one by language. (Which engines are registered depends on the build and
// the machine: quickjs-wasmtime needs cgo, and starlark's default is
// starlark-native where it can run, starlark-wasm elsewhere.)
func ExampleRegister() {
	var r registry.Registry
	builtin.Register(&r)
	for _, lang := range []string{"javascript", "wasm"} {
		e, err := r.Default(lang)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(lang, "default:", e.Engine)
	}
	// Output:
	// javascript default: quickjs
	// wasm default: extism
}
