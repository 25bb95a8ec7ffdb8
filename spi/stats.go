package spi

import "time"

// Stats are the figures only the engine knows about one evaluation,
// reported on the Outcome. Each is present only where the engine truly
// measured it: a zero field means "not known", never "zero", and a backend
// must never guess one. The effect measures what it can itself (the
// backend call's duration, bytes in and out) and reports both in its run
// record.
type Stats struct {
	// Startup is the time the engine spent making the script's
	// environment ready (instantiating or restoring a module, creating a
	// runtime, seeding the input) before the script started.
	Startup time.Duration
	// ScriptTime is the time the script itself ran, measured as
	// Limits.WallClock is: from the moment the script starts.
	ScriptTime time.Duration
	// MemoryPeakBytes is the high-water mark of the script's memory, for
	// engines that know it (a wasm engine's linear memory size at the end
	// of the run: linear memory never shrinks).
	MemoryPeakBytes int64
	// CPUUnit names what CPUUnits counts ("fuel", "steps"); empty when the
	// engine counts nothing. CPUUnits may be zero when CPUUnit is set.
	CPUUnit  string
	CPUUnits int64
}
