package run

import (
	"fmt"
	"time"
)

// The start-up phases a run goes through before the script starts; a
// StartupError names the one it was in. A run begins in PhaseCompile
// (waiting for the compiled module, which the cold-start allowance does
// not cover); the runtime moves it through the others.
const (
	PhaseCompile     = "compile"
	PhaseInstantiate = "instantiate"
	PhaseBoot        = "boot"
	PhaseInput       = "input"
	PhaseScript      = "script"
)

// StartupError reports that a run's start-up phases (which the script's
// wall clock does not cover) took longer than the cold-start allowance.
// It is not an outcome of the script: the effect reports it untyped, and
// a retry may succeed. Waiting for the module's compile is not a start-up
// phase: it is bounded by the caller's context only. Each backend
// exposes it under its own name (quickjs.StartupError, …); match it with
// errors.As.
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

// ColdStart is a runtime's cold-start allowance: Base, plus PerMiB for
// every MiB of the run's input.
type ColdStart struct {
	Base   time.Duration
	PerMiB time.Duration
}

// For is the allowance of a run whose input is inputBytes long.
func (c ColdStart) For(inputBytes int) time.Duration {
	return c.Base + time.Duration(float64(c.PerMiB)*float64(inputBytes)/(1<<20))
}
