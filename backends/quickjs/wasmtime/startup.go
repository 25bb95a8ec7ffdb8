//go:build cgo

package wasmtime

import "github.com/sandbank/sandbank/spi"

// StartupError reports that a run's start-up phases (which the script's
// wall clock does not cover) took longer than the cold-start allowance
// (Options.ColdStartAllowance). It is not an outcome of the script: the
// effect reports it untyped, and a retry may succeed. Waiting for the
// module's compile is not a start-up phase: it is bounded by the caller's
// context only. Its Phase is "instantiate" (creating the instance),
// "boot" (the engine starting) or "input" (reading and parsing the
// input); match it with errors.As. It is the one start-up error of the
// wasm engines (quickjs.StartupError is the same type).
type StartupError = spi.StartupError
