package quickjs

import "github.com/sandbank/sandbank/spi"

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one: New rewrites and compiles a 1.4 MB module, which a
// registry listing the engine must not pay for. Declare does not check
// opts; New does, and for options it refuses there is no backend, so the
// result means nothing.
func Declare(opts *Options) spi.Capabilities {
	set, _ := opts.settings() // refused options build no backend (see above)
	return set.capabilities()
}

// Capabilities implements spi.Backend: the declaration of the options the
// backend was built with (see [Declare]).
func (b *Backend) Capabilities() spi.Capabilities { return b.set.capabilities() }

// capabilities is the declaration of a backend with settings s: the wall
// clock is hard when the stop check (or wazero's close-on-context-done)
// stops a run, and there is a CPU budget when Options.Fuel sets one.
func (s settings) capabilities() spi.Capabilities {
	wc := spi.WallClockHard
	if !s.stopCheck && !s.wazeroClose {
		wc = spi.WallClockSoft
	}
	return spi.Capabilities{
		Language:    Language,
		Network:     spi.NetworkNone,
		WallClock:   wc,
		Memory:      true,
		CPU:         s.fuel > 0, // Options.Fuel
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
		// determinism.go: a fake clock and a seeded random source.
		Deterministic: true,
		// The global files, answered by the host (wasmguest's files.go).
		Files: true,
	}
}
