package starlarkwasm

import "github.com/sandbank/sandbank/spi"

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one (New compiles the guest module), so that a registry lists
// the engine for free. They do not depend on opts. Declare does not check
// opts; New does.
//
// The backend declares no network, a hard wall clock (the instance is
// stopped), the memory limit (linear memory cannot grow past it), the step
// budget as the CPU limit, a fresh interpreter per run (a parked instance
// restored to its park point, or a new instance: TestParkedMatchesFresh),
// host calls (host and
// host_try, relayed over the guest's stdio) and logs (print, as framed log
// records).
func Declare(*Options) spi.Capabilities {
	return spi.Capabilities{
		Language:    Language,
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockHard,
		Memory:      true,
		CPU:         true,
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
		Files:       true, // the files module, relayed to the host (wasmguest's files.go)
	}
}

// Capabilities implements spi.Backend: [Declare]'s declaration, which the
// conformance kit proves.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }
