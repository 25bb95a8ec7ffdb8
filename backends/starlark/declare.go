package starlark

import "github.com/sandbank/sandbank/spi"

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one, so that a registry lists the engine for free. They do not
// depend on opts. Declare does not check opts; New does.
//
// The backend declares no network, a soft wall clock, no memory bound, a
// step budget as the CPU limit, a fresh thread and globals per run, and
// host calls (host and host_try; see host.go), and files (the files
// module; see files.go).
func Declare(*Options) spi.Capabilities {
	return spi.Capabilities{
		Language:    Language,
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockSoft,
		Memory:      false,
		CPU:         true,
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
		Files:       true,
	}
}

// Capabilities implements spi.Backend: [Declare]'s declaration, which the
// conformance kit proves.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }
