package run

import (
	"time"

	"github.com/sandbank/sandbank/spi"
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

// StartupError is the error a run whose start-up phases overran the
// cold-start allowance ends with: spi.StartupError, which each backend
// exposes under its own name (quickjs.StartupError, …).
type StartupError = spi.StartupError

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
