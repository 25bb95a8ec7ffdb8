//go:build race

package main

// raceEnabled: this test binary was built with -race, under which
// compiling a large wasm module (starlark-wasm's guest) takes minutes.
const raceEnabled = true
