package starlarkwasm

import "github.com/sandbank/sandbank/spi"

// StartupError reports that a run's start-up (instantiating the guest,
// the Go runtime's boot, reading, compiling and converting the script
// and its input), which the script's wall clock does not cover, took
// longer than the cold-start allowance (Options.ColdStartAllowance). It
// is not an outcome of the script: the effect reports it untyped, and a
// retry may succeed. Waiting for the module's compile is not part of it.
// Its Phase is "instantiate"; match it with errors.As. It is the one
// start-up error of the wasm engines (quickjs.StartupError is the same
// type).
type StartupError = spi.StartupError
