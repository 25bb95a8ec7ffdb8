package spi

import (
	"fmt"
	"time"
)

// StartupError reports that a run's start-up phases (creating an
// instance, booting the engine, reading the input: what the script's wall
// clock does not cover) took longer than the backend's cold-start
// allowance (SPI 1.2). It is not an outcome of the script: the effect
// reports it as infrastructure, and a retry may succeed. The wasm
// backends return it (quickjs.StartupError and the others are this type);
// match it with errors.As.
type StartupError struct {
	// Backend is the package of the backend that reports it ("quickjs",
	// "wasmtime", "starlarkwasm"); the message starts with it.
	Backend string
	// Phase is the start-up phase the run was in: "instantiate" (creating
	// or waiting for an instance), "boot" (the engine starting) or
	// "input" (reading and parsing the input).
	Phase string
	// Allowance is the cold-start allowance that ran out.
	Allowance time.Duration
}

// Error says which phase overran which allowance.
func (e *StartupError) Error() string {
	msg := fmt.Sprintf("start-up phase %q exceeded the cold-start allowance of %v", e.Phase, e.Allowance)
	if e.Backend == "" {
		return msg
	}
	return e.Backend + ": " + msg
}
