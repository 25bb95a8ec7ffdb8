package quickjs

import (
	"errors"
	"runtime"
	"time"

	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// Mode is how a backend gives every run a fresh engine (the values of
// internal/wasm/park's, as starlarkwasm.Mode's are). The zero value of
// Options.Mode means the default, ModeParked.
type Mode int

// String names the mode ("parked", "fresh").
func (m Mode) String() string { return park.Mode(m).String() }

// The modes.
const (
	// ModeParked keeps a pool of parked instances: each booted once,
	// stopped inside its first read of the request, and snapshotted there.
	// Every run restores the whole snapshot (linear memory, mutable
	// globals, call stack, WASI state) before it resumes with its own
	// request, so a run sees exactly what a fresh instance would; an
	// instance whose run ended in any way but the expected one is
	// discarded and replaced off the request path. The default.
	ModeParked = Mode(park.ModeParked)
	// ModeFresh instantiates the module anew for every run and boots the
	// engine inside it (about ten times slower than ModeParked).
	ModeFresh = Mode(park.ModeFresh)
)

// The defaults of the options (internal/wasm/run's, which
// backends/quickjs/wasmtime shares): the cold-start allowance and the
// stderr a run keeps.
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
	// MaxFuel is the largest Options.Fuel: 2^62 units.
	MaxFuel uint64 = 1 << 62
	// DefaultStackBytes is the engine's C stack when Options.StackBytes
	// is zero: 1 MiB, 3,616 plain JavaScript frames.
	DefaultStackBytes = 1 << 20
	// MinStackBytes and MaxStackBytes bound Options.StackBytes.
	MinStackBytes = 64 << 10
	MaxStackBytes = 256 << 20
)

// Options configure a backend. A nil *Options, or the zero value of a
// field, means the documented default.
type Options struct {
	// CacheDir is the directory where the backend keeps the rewritten
	// module and its compiled machine code across processes, sealed (each
	// entry is checked against its SHA-256 before it is used, and a damaged
	// one costs a recompile), so that a new process neither rewrites nor
	// compiles: its first Evaluate takes milliseconds instead of about a
	// second. It is created (mode 0700) if missing, and must be a directory
	// only its owner, the current user, can write: New fails otherwise.
	// Empty means the default, $SANDBANK_CACHE_DIR or
	// os.UserCacheDir()/sandbank, used when it passes the same checks
	// (otherwise the backend compiles in memory, which costs only time).
	// Set NoCache to turn it off.
	CacheDir string

	// NoCache, when true, keeps nothing on disk: the module is rewritten
	// and compiled in memory, once per process (an in-memory cache every
	// such backend of the process shares). It cannot be used with
	// CacheDir.
	NoCache bool

	// StopCheck, when nil or true, runs QuickJS rewritten with a stop
	// check (internal/wasm/rewrite): every loop header and call counts
	// inside compiled code, and the guest visits the host every few
	// thousand of them, where a run whose context is done is stopped. That
	// is what stops a script at its deadline, and what keeps a running
	// script from holding up the Go runtime's garbage collector: the
	// backend then declares WallClock hard. Set it to false only to
	// measure what the check costs: the module then runs without it (the
	// other rewrites, such as the memory-size pass, stay), a runaway script runs until it ends on its own (a script that never
	// ends keeps a goroutine and a core busy forever, and Close waits for
	// it), Evaluate reports the wall clock only once the script has
	// ended, and the backend declares WallClock soft.
	StopCheck *bool

	// CloseOnContextDone is the former name of StopCheck, which it sets
	// when StopCheck is nil. wazero's close-on-context-done is no longer
	// used: its check left compiled code for Go at every loop header.
	//
	// Deprecated: use StopCheck.
	CloseOnContextDone *bool

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

	// Fuel, when not zero, is the CPU budget of a run, in the stop check's
	// units: one per loop iteration and per function call in the guest,
	// one per KiB of bulk memory work. A run that spends it ends in the
	// typed limit cpu, and the backend declares CPU. The count is
	// deterministic: a script spends the same fuel on every run of the
	// same mode (the engine's boot is not charged; measured: the same
	// count in both modes). An iteration of a simple JavaScript loop costs
	// about 20 units (20,000 iterations of s += i: 407,924). Zero means no
	// CPU budget; a value without StopCheck, or above MaxFuel, is refused.
	Fuel uint64

	// Mode selects parked instances (ModeParked) or a new instance per
	// run (ModeFresh). Zero means ModeParked; any other value is refused.
	Mode Mode

	// StackBytes is the size of the engine's C stack, a multiple of
	// 64 KiB from MinStackBytes to MaxStackBytes; zero means
	// DefaultStackBytes. The stack is a region of linear memory of its
	// own (internal/wasm/rewrite's stack pass), so it counts against every
	// run's memory limit: a run's linear memory starts at about 192 KiB
	// plus StackBytes. A recursion that runs out of it ends in the thrown
	// RangeError "Maximum call stack size exceeded", never in a wrong
	// value or a trap; docs/recursion.md gives the depths that fit
	// (about 290 bytes a plain JavaScript frame). Above about 5 MiB a
	// larger stack buys no depth: wazero's own native call stack (a
	// ceiling of 50 million bytes in v1.12.0) runs out first, at 17,368
	// frames, and is read the same way. Another value is refused.
	StackBytes int

	// PoolSize is how many parked instances ModeParked keeps ready per
	// memory limit. Zero means runtime.GOMAXPROCS(0); negative is
	// refused. A run that finds no parked instance boots one of its own
	// (as long as a fresh instance takes), so the pool bounds what is
	// kept, never how many runs go side by side.
	PoolSize int
}

// settings are the validated options.
type settings struct {
	wasmrun.Settings
	stopCheck   bool // run the rewritten module
	fuel        int64
	wazeroClose bool // wazero's close-on-context-done (tests measure it against the stop check)
	mode        Mode
	poolSize    int
	stackBytes  uint32
}

func (o *Options) settings() (settings, error) {
	s := settings{
		stopCheck:  true,
		mode:       ModeParked,
		poolSize:   runtime.GOMAXPROCS(0),
		stackBytes: DefaultStackBytes,
	}
	if o == nil {
		o = &Options{}
	}
	var err error
	s.Settings, err = wasmrun.Options{CacheDir: o.CacheDir, NoCache: o.NoCache, ColdStartAllowance: o.ColdStartAllowance, MaxStderrBytes: o.MaxStderrBytes}.Settings("quickjs")
	if err != nil {
		return settings{}, err
	}
	switch {
	case o.StopCheck != nil:
		s.stopCheck = *o.StopCheck
	case o.CloseOnContextDone != nil:
		s.stopCheck = *o.CloseOnContextDone
	}
	switch {
	case o.Fuel > MaxFuel:
		return settings{}, errors.New("quickjs: Fuel above MaxFuel")
	case o.Fuel > 0 && !s.stopCheck:
		return settings{}, errors.New("quickjs: Fuel needs the stop check")
	}
	s.fuel = int64(o.Fuel)
	switch o.Mode {
	case 0:
	case ModeParked, ModeFresh:
		s.mode = o.Mode
	default:
		return settings{}, errors.New("quickjs: unknown Mode")
	}
	switch {
	case o.PoolSize < 0:
		return settings{}, errors.New("quickjs: negative PoolSize")
	case o.PoolSize > 0:
		s.poolSize = o.PoolSize
	}
	switch {
	case o.StackBytes == 0:
	case o.StackBytes < MinStackBytes || o.StackBytes > MaxStackBytes || o.StackBytes%(64<<10) != 0:
		return settings{}, errors.New("quickjs: StackBytes is not a multiple of 64 KiB from MinStackBytes to MaxStackBytes")
	default:
		s.stackBytes = uint32(o.StackBytes)
	}
	return s, nil
}
