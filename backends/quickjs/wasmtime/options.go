//go:build cgo

package wasmtime

import (
	"errors"
	"time"

	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// The defaults of the options (internal/wasm/run's, as quickjs's): the
// cold-start allowance and the stderr a run keeps.
const (
	// DefaultColdStartAllowance bounds the start-up phases of one run
	// (instantiating, booting the engine, reading and parsing the input)
	// when Options.ColdStartAllowance is zero: 30 s, plus
	// DefaultColdStartPerInputMiB for every MiB of input; only a stalled
	// start-up runs out.
	DefaultColdStartAllowance = wasmrun.DefaultColdStartAllowance
	// DefaultColdStartPerInputMiB is what the default cold-start
	// allowance adds for every MiB of input: 4 s.
	DefaultColdStartPerInputMiB = wasmrun.DefaultColdStartPerInputMiB
	// DefaultMaxStderrBytes bounds what the engine and the script's
	// print/console output may leave on stderr per run.
	DefaultMaxStderrBytes = wasmrun.DefaultMaxStderrBytes
)

// The limits a request leaves at zero, and their bounds.
const (
	// DefaultMemoryBytes is the memory limit of a request whose
	// Limits.MemoryBytes is zero: 32 MiB.
	DefaultMemoryBytes = wasmrun.DefaultMemoryBytes
	// DefaultWallClock is the wall clock of a request whose
	// Limits.WallClock is zero: 5 s.
	DefaultWallClock = wasmrun.DefaultWallClock
	// MaxMemoryBytes is the largest memory a run can have: all of a 32-bit
	// WebAssembly address space. A larger request is clamped to it.
	MaxMemoryBytes = wasmrun.MaxMemoryBytes
	// MaxFuel is the largest budget wasmtime accepts (fuel is a signed
	// 64-bit count inside the engine); a larger Options.Fuel is refused.
	MaxFuel uint64 = 1<<63 - 1
)

// bootFuel is the fuel a run gets for its start-up phases (booting the
// engine, parsing the input), which the script's budget does not cover;
// the cold-start allowance bounds them in time.
const bootFuel = MaxFuel

// Options configure a backend. A nil *Options, or the zero value of a
// field, means the documented default.
type Options struct {
	// CacheDir is the directory where the backend keeps the compiled module
	// (wasmtime's Module.Serialize) across processes, sealed (each entry
	// carries its SHA-256, and a damaged one costs a recompile), which
	// takes the compile (seconds) off the first run after a process starts.
	// It is created (mode 0700) if missing, and must be a directory only
	// its owner, the current user, can write: New fails otherwise. Empty
	// means the default, $SANDBANK_CACHE_DIR or os.UserCacheDir()/sandbank,
	// used when it passes the same checks (otherwise the module is compiled
	// once per process, in memory). Set NoCache to turn it off.
	CacheDir string

	// NoCache, when true, keeps nothing on disk: the module is compiled
	// once per process. It cannot be used with CacheDir.
	NoCache bool

	// Fuel is the CPU budget of one run, in wasmtime fuel units (about one
	// per WebAssembly instruction), counted from the moment the script
	// starts; a run that spends it ends in the typed limit cpu. The count
	// is deterministic: the same script with the same input spends the
	// same fuel on every run. QuickJS spends 6 to 14 billion units a
	// second on the machines this was measured on (a tight loop the
	// most). Zero means no CPU budget: the runs use an engine that counts
	// no fuel (counting costs every run, whether or not a budget is set),
	// and the wall clock alone bounds them. More than MaxFuel is refused.
	Fuel uint64

	// ColdStartAllowance bounds the start-up phases of a run
	// (instantiate, boot, input; not the once-per-process compile), which
	// are not charged to the script's wall clock. Running past it is an
	// untyped, retryable error naming the phase, never a limit. Zero
	// means DefaultColdStartAllowance plus DefaultColdStartPerInputMiB
	// per MiB of input; a value set here is the whole allowance, whatever
	// the input. Negative is refused.
	ColdStartAllowance time.Duration

	// MaxStderrBytes bounds the stderr kept per run (the engine's own
	// messages and the script's print/console output); the rest is
	// dropped. Zero means DefaultMaxStderrBytes; negative is refused.
	MaxStderrBytes int
}

// settings are the validated options.
type settings struct {
	wasmrun.Settings
	fuel uint64 // zero: no CPU budget, no fuel counted
}

func (o *Options) settings() (settings, error) {
	if o == nil {
		o = &Options{}
	}
	var s settings
	var err error
	s.Settings, err = wasmrun.Options{CacheDir: o.CacheDir, NoCache: o.NoCache, ColdStartAllowance: o.ColdStartAllowance, MaxStderrBytes: o.MaxStderrBytes}.Settings("wasmtime")
	if err != nil {
		return settings{}, err
	}
	if o.Fuel > MaxFuel {
		return settings{}, errors.New("wasmtime: Fuel above MaxFuel")
	}
	s.fuel = o.Fuel
	return s, nil
}
