package goja

import "github.com/sandbank/sandbank/spi"

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one, so that a registry lists the engine for free. goja's do
// not depend on opts. Declare does not check opts; New does.
//
// goja declares no network, a soft wall clock (a native built-in runs to
// completion), no memory limit, no CPU budget, a fresh runtime per run,
// host calls (the global host; see host.go) and files (the global
// files; see files.go). What the soft clock
// costs is bounded: a run stopped inside a native built-in goes on in the
// background, holding a core, and counts against the backend's
// concurrency until it ends; while Options.MaxLeftovers (default
// GOMAXPROCS) such runs go on, every new run is refused at once with a
// retryable infrastructure outcome (MsgLeftovers) instead of running
// beside them.
func Declare(*Options) spi.Capabilities {
	return spi.Capabilities{
		Language:    Language,
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockSoft,
		Memory:      false,
		CPU:         false,
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
		Files:       true, // files.go
	}
}

// Capabilities implements spi.Backend: [Declare]'s declaration, which the
// conformance kit proves.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }
