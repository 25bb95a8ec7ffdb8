package quickjs

import (
	"fmt"
	"time"
)

// StartupError reports that a run's start-up phases (which the script's
// wall clock does not cover) took longer than the cold-start allowance
// (Options.ColdStartAllowance). It is not an outcome of the script: the
// effect reports it untyped, and a retry may succeed. Waiting for the
// module's compile is not a start-up phase: it is bounded by the caller's
// context only.
type StartupError struct {
	// Phase is the start-up phase the run was in: "instantiate" (creating
	// or waiting for an instance), "boot" (the engine starting) or
	// "input" (reading and parsing the input).
	Phase string
	// Allowance is the cold-start allowance that ran out.
	Allowance time.Duration
}

// Error says which phase overran which allowance.
func (e *StartupError) Error() string {
	return fmt.Sprintf("quickjs: start-up phase %q exceeded the cold-start allowance of %v", e.Phase, e.Allowance)
}
