package builtin_test

import (
	"fmt"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/registry"
)

// Register the built-in engines in a registry the program owns, then pick
// one by language.
func ExampleRegister() {
	var r registry.Registry
	builtin.Register(&r)
	for _, e := range r.Engines() {
		fmt.Println(e.Engine, e.Language)
	}
	js, err := r.Default("javascript")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("javascript default:", js.Engine)
	// Output:
	// extism wasm
	// goja javascript
	// quickjs javascript
	// starlark starlark
	// javascript default: quickjs
}
