package extism

import "github.com/sandbank/sandbank/spi"

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one, so that a registry lists the engine for free. Declare
// does not check opts; New does.
//
// The backend declares a hard wall clock, the memory limit, no CPU budget
// (see the package documentation), a fresh instance per run, host calls
// and logs; the network is none without Options.AllowedHosts and
// allowlist with them. It takes no files (see the package documentation,
// "Files").
func Declare(opts *Options) spi.Capabilities {
	network := spi.NetworkNone
	if opts != nil && len(opts.AllowedHosts) > 0 {
		network = spi.NetworkAllowlist
	}
	return spi.Capabilities{
		Language:    Language,
		Network:     network,
		WallClock:   spi.WallClockHard,
		Memory:      true,
		CPU:         false,
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
		Files:       false, // doc.go, "Files"
	}
}

// Capabilities implements spi.Backend: the declaration of the options the
// backend was built with (see [Declare]).
func (b *Backend) Capabilities() spi.Capabilities { return b.caps }
