package run

import (
	"errors"
	"time"
)

// The defaults of the QuickJS engines (backends/quickjs on wazero and
// backends/quickjs/wasmtime), which each exposes under its own name.
const (
	// DefaultColdStartAllowance bounds the start-up phases of one run
	// (instantiating, booting the engine, reading and parsing the input),
	// which are not charged to the script's wall clock, when
	// Options.ColdStartAllowance is zero: 30 s, plus
	// DefaultColdStartPerInputMiB for every MiB of input. Waiting for the
	// module's compile (once per process) is not part of it: it is bounded
	// by the caller's context. Booting takes milliseconds; parsing the
	// input dominates: a 32 MiB input of 1.2 million objects took 49 to
	// 68 s (1.5 to 2.1 s a MiB) on a 2-core machine at load average 15.
	// 30 s is far above any boot, and the per-MiB term about twice the
	// worst parse rate measured, so only a stalled start-up runs out,
	// while a StartupError still arrives before the effect's own deadline
	// (the wall clock plus a 60 s grace) for the inputs the default
	// memory limit can hold.
	DefaultColdStartAllowance = 30 * time.Second
	// DefaultColdStartPerInputMiB is what the default cold-start
	// allowance adds for every MiB of input: 4 s.
	DefaultColdStartPerInputMiB = 4 * time.Second
	// DefaultMaxStderrBytes bounds what the engine and the script's
	// print/console output may leave on stderr per run.
	DefaultMaxStderrBytes = 64 << 10
	// DefaultMemoryBytes is the memory limit of a request whose
	// Limits.MemoryBytes is zero.
	DefaultMemoryBytes int64 = 32 << 20
	// DefaultWallClock is the wall clock of a request whose
	// Limits.WallClock is zero.
	DefaultWallClock = 5 * time.Second
	// MaxMemoryBytes is the largest memory a run can have: all of a 32-bit
	// WebAssembly address space. A larger request is clamped to it.
	MaxMemoryBytes int64 = 4 << 30
)

// Options are the options the QuickJS engines share, as their own
// Options carry them (each documents them for its callers).
type Options struct {
	CacheDir           string
	NoCache            bool
	ColdStartAllowance time.Duration
	MaxStderrBytes     int
}

// Settings are Options validated, the defaults filled in.
type Settings struct {
	CacheDir       string
	NoCache        bool
	ColdStart      ColdStart
	MaxStderrBytes int
}

// Settings validates o: CacheDir with NoCache, a negative
// ColdStartAllowance or MaxStderrBytes is an error, whose message starts
// with name. A ColdStartAllowance set is the whole allowance, whatever
// the input.
func (o Options) Settings(name string) (Settings, error) {
	s := Settings{
		CacheDir:       o.CacheDir,
		NoCache:        o.NoCache,
		ColdStart:      ColdStart{Base: DefaultColdStartAllowance, PerMiB: DefaultColdStartPerInputMiB},
		MaxStderrBytes: DefaultMaxStderrBytes,
	}
	if o.NoCache && o.CacheDir != "" {
		return Settings{}, errors.New(name + ": CacheDir and NoCache cannot be used together")
	}
	switch {
	case o.ColdStartAllowance < 0:
		return Settings{}, errors.New(name + ": negative ColdStartAllowance")
	case o.ColdStartAllowance > 0:
		s.ColdStart = ColdStart{Base: o.ColdStartAllowance}
	}
	switch {
	case o.MaxStderrBytes < 0:
		return Settings{}, errors.New(name + ": negative MaxStderrBytes")
	case o.MaxStderrBytes > 0:
		s.MaxStderrBytes = o.MaxStderrBytes
	}
	return s, nil
}
