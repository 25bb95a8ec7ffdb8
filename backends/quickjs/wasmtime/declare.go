//go:build cgo

package wasmtime

import "github.com/sandbank/sandbank/spi"

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one (New compiles the guest module), so that a registry lists
// the engine for free. They do not depend on opts: the engine can always
// enforce a CPU budget, which a backend built with Options.Fuel does (the
// conformance kit proves it through its CPUBudget factory). Declare does
// not check opts; New does.
func Declare(*Options) spi.Capabilities {
	return spi.Capabilities{
		Language:    Language,
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockHard,
		Memory:      true,
		CPU:         true, // fuel, under Options.Fuel
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
	}
}

// Capabilities implements spi.Backend: [Declare]'s declaration, which the
// conformance kit proves.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }
