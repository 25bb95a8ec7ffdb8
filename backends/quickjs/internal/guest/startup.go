package guest

import (
	"fmt"
	"time"
)

// The start-up phases a run goes through before the script starts, on
// either runtime; a StartupError names the one it was in.
const (
	PhaseCompile     = "compile"
	PhaseInstantiate = "instantiate"
	PhaseBoot        = "boot"
	PhaseInput       = "input"
	PhaseScript      = "script"
)

// StartupError reports that a run's start-up phases (which the script's
// wall clock does not cover) took longer than the cold-start allowance.
// It is not an outcome of the script: the effect reports it untyped, and a
// retry may succeed. The engine packages export it under their own name
// (quickjs.StartupError, wasmtime.StartupError are this type).
type StartupError struct {
	// Engine names the package that reports it ("quickjs", "wasmtime").
	Engine string
	// Phase is the start-up phase the run was in: "compile",
	// "instantiate", "boot" (the engine starting) or "input" (reading and
	// parsing the input).
	Phase string
	// Allowance is the cold-start allowance that ran out.
	Allowance time.Duration
}

func (e *StartupError) Error() string {
	return fmt.Sprintf("%s: start-up phase %q exceeded the cold-start allowance of %v", e.Engine, e.Phase, e.Allowance)
}
