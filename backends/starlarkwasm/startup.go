package starlarkwasm

import (
	"fmt"
	"time"
)

// StartupError reports that a run's start-up (instantiating the guest,
// the Go runtime's boot, reading, compiling and converting the script
// and its input), which the script's wall clock does not cover, took
// longer than the cold-start allowance (Options.ColdStartAllowance). It
// is not an outcome of the script: the effect reports it untyped, and a
// retry may succeed. Waiting for the module's compile is not part of it.
type StartupError struct {
	// Allowance is the cold-start allowance that ran out.
	Allowance time.Duration
}

// Error says which allowance ran out.
func (e *StartupError) Error() string {
	return fmt.Sprintf("starlarkwasm: start-up exceeded the cold-start allowance of %v", e.Allowance)
}
