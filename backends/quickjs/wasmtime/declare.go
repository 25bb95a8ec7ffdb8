//go:build cgo

package wasmtime

import "github.com/sandbank/sandbank/spi"

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one (New compiles the guest module), so that a registry lists
// the engine for free. There is a CPU budget when Options.Fuel sets one
// (without it no fuel is counted, and the wall clock alone bounds a run).
// Declare does not check opts; New does.
func Declare(opts *Options) spi.Capabilities {
	return declare(opts != nil && opts.Fuel > 0)
}

// declare is the declaration of a backend with or without a CPU budget.
func declare(fuel bool) spi.Capabilities {
	return spi.Capabilities{
		Language:    Language,
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockHard,
		Memory:      true,
		CPU:         fuel, // Options.Fuel
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
		Files:       true, // the global files, answered by the host
	}
}

// Capabilities implements spi.Backend: [Declare]'s declaration, which the
// conformance kit proves.
func (b *Backend) Capabilities() spi.Capabilities { return declare(b.set.fuel > 0) }
