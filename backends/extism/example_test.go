package extism_test

import (
	"context"
	"fmt"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/storage"
)

// Run a wasm plugin (here the fixture set's echo) through the effect.
func ExampleNew() {
	backend, err := extism.New(nil)
	if err != nil {
		panic(err)
	}
	scripts := new(storage.MemoryStore)
	plugin, _ := wasm.Set().Script("echo")
	addr, _ := scripts.Put(plugin)
	e, err := effect.New(scripts, backend, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close() // closes the backend too

	out, err := e.Evaluate(context.Background(), effect.Call{Script: addr, Input: map[string]string{"hello": "wasm"}})
	fmt.Println(string(out), err)
	fmt.Println(e.Capabilities().Network, e.Idempotent())
	// Output:
	// {"hello":"wasm"} <nil>
	// none true
}

// A backend that may reach hosts declares Network allowlist, and the effect
// refuses it unless the operator opts in.
func ExampleOptions_allowedHosts() {
	backend, err := extism.New(&extism.Options{AllowedHosts: []string{"api.example.com"}})
	if err != nil {
		panic(err)
	}
	_, err = effect.New(new(storage.MemoryStore), backend, nil)
	fmt.Println(err)
	e, err := effect.New(new(storage.MemoryStore), backend, &effect.Options{AllowNetwork: true})
	fmt.Println(err, e.Capabilities().Network)
	_ = e.Close()
	// Output:
	// effect: backend declares network allowlist; set Options.AllowNetwork to accept it
	// <nil> allowlist
}
