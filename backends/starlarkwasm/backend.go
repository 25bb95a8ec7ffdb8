package starlarkwasm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/internal/wasm/cache"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// Engine is the engine name this backend registers under.
const Engine = "starlark-wasm"

// Language is the script language this backend runs: the same as the
// in-process engine's, with the same fixtures.
const Language = starlark.Language

// Defaults and bounds of a run's limits.
const (
	// DefaultWallClock is the script's wall clock when the request sets
	// none.
	DefaultWallClock = 5 * time.Second
	// DefaultMemoryBytes is the memory limit when the request sets none
	// (32 MiB, the effect's default).
	DefaultMemoryBytes int64 = 32 << 20
	// MaxMemoryBytes caps a request's memory limit (1 GiB): a larger one
	// is lowered to it.
	MaxMemoryBytes int64 = 1 << 30
	// DefaultColdStartAllowance bounds a run's start-up (instantiating,
	// the Go runtime's boot, reading the script and the input, compiling
	// and converting them) when Options leave it zero: 30 s, QuickJS's
	// figure, far above the tens of milliseconds a start-up takes on an
	// idle machine, so that only a stuck start-up reaches it (a loaded
	// machine under -race took over 10 s for a 400 KB input). See
	// Options.ColdStartAllowance.
	DefaultColdStartAllowance = 30 * time.Second
	// DefaultColdStartPerMiB is what the allowance grows by per MiB of
	// input: the guest converts the input about twenty times slower than
	// the in-process engine.
	DefaultColdStartPerMiB = 4 * time.Second
)

// ErrClosed is returned (wrapped) by Evaluate and Warm after Close; match
// it with errors.Is. It is the one ErrClosed of the wasm engines.
var ErrClosed = wasmrun.ErrClosed

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
)

// Options configure the backend. The zero value (or a nil *Options) means
// defaults; every field documents its default.
type Options struct {
	// MaxSteps is the step budget of one run, as in the in-process engine
	// (starlark.Options.MaxSteps): a run that exhausts it is reported as
	// the CPU limit. Zero means starlark.DefaultMaxSteps; negative is
	// refused.
	MaxSteps int64
	// MaxResultBytes bounds the result as JSON text while the guest
	// encodes it (starlark.Options.MaxResultBytes). Zero means
	// starlark.DefaultMaxResultBytes; negative is refused. The memory
	// limit bounds it too.
	MaxResultBytes int64
	// ColdStartAllowance bounds a run's start-up, before the script's own
	// wall clock starts, plus DefaultColdStartPerMiB per MiB of input: a
	// run that overruns it fails with a *StartupError (untyped, worth
	// retrying). Zero means DefaultColdStartAllowance; negative is
	// refused. Waiting for the module's compile (once per process) is not
	// part of it.
	ColdStartAllowance time.Duration
	// CacheDir is the directory where the backend keeps the guest module
	// rewritten with its stop check and its compiled machine code across
	// processes, sealed (each entry is checked against its SHA-256 before
	// it is used, and a damaged one costs a recompile), so that a new
	// process neither rewrites nor compiles (about two seconds). It is
	// created (mode 0700) if missing, and must be a directory only its
	// owner, the current user, can write: New fails otherwise. Empty means
	// the default, $SANDBANK_CACHE_DIR or os.UserCacheDir()/sandbank, used
	// when it passes the same checks (otherwise the backend compiles in
	// memory, which costs only time). Set NoCache to turn it off.
	CacheDir string
	// NoCache, when true, keeps nothing on disk: the guest is rewritten
	// and compiled in memory, once per process. It cannot be used with
	// CacheDir.
	NoCache bool
	// Mode selects parked instances (ModeParked) or a new instance per
	// run (ModeFresh). Zero means ModeParked; any other value is refused.
	// New falls back to ModeFresh when the module cannot be proven
	// restorable (see Backend.ParkedModeError).
	Mode Mode
	// PoolSize is how many parked instances ModeParked keeps ready per
	// memory limit (and per whether the run has a log sink, which the
	// guest's arguments fix). Zero means runtime.GOMAXPROCS(0), at most
	// 4; negative is refused. A run that finds no parked instance boots
	// one of its own, so the pool bounds what is kept, never how many
	// runs go side by side.
	PoolSize int
}

// Backend runs every evaluation on a parked instance of the guest module
// restored to its park point (ModeParked), or in a new instance
// (ModeFresh), in a wazero runtime every backend of the process with the
// same cache directory and mode shares. Build one
// with [New]; it is safe for concurrent use, and [Backend.Close] releases
// it.
type Backend struct {
	maxSteps, maxResult int64
	mode                Mode
	parkedErr           error   // why ModeParked fell back to ModeFresh, or nil
	eng                 *engine // ModeFresh's
	peng                *engine // ModeParked's

	// ModeParked's pools (pool.go) and its instances, which Close waits
	// for.
	pools     *park.Pools[poolKey, *instance]
	instances sync.WaitGroup
	// maxRestores is the cap on one instance's runs (the constant; tests
	// lower it).
	maxRestores int
	boots       atomic.Int64 // instances started (for tests)

	// core is the run lifecycle (internal/wasm/run), over the runtime
	// (run.go).
	core *wasmrun.Engine[wazero.CompiledModule, facts]

	// observe, nil in production, sees the facts of every run.
	observe func(facts)
	// restored and retaken, nil in production, see a parked instance
	// right after its restore and at its retake (the guest back at its
	// park point).
	restored, retaken func(*instance)
}

// New returns a starlark-wasm backend. A nil opts means defaults; a
// negative option is an error. In ModeParked New rewrites the guest with
// the passes of parked instances (once per process, or read from the
// cache directory), falling back to ModeFresh when one refuses. The
// module is compiled by Warm or by the first Evaluate.
func New(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxSteps < 0:
		return nil, fmt.Errorf("starlarkwasm: MaxSteps is %d, want > 0 (or 0 for the default)", o.MaxSteps)
	case o.MaxResultBytes < 0:
		return nil, fmt.Errorf("starlarkwasm: MaxResultBytes is %d, want > 0 (or 0 for the default)", o.MaxResultBytes)
	case o.ColdStartAllowance < 0:
		return nil, fmt.Errorf("starlarkwasm: ColdStartAllowance is %v, want > 0 (or 0 for the default)", o.ColdStartAllowance)
	case o.PoolSize < 0:
		return nil, fmt.Errorf("starlarkwasm: PoolSize is %d, want > 0 (or 0 for the default)", o.PoolSize)
	case o.Mode != 0 && o.Mode != ModeParked && o.Mode != ModeFresh:
		return nil, errors.New("starlarkwasm: unknown Mode")
	}
	if o.Mode == 0 {
		o.Mode = ModeParked
	}
	if o.PoolSize == 0 {
		o.PoolSize = min(runtime.GOMAXPROCS(0), 4)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = starlark.DefaultMaxSteps
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = starlark.DefaultMaxResultBytes
	}
	if o.ColdStartAllowance == 0 {
		o.ColdStartAllowance = DefaultColdStartAllowance
	}
	dir, err := cache.Resolve(o.CacheDir, o.NoCache)
	if err != nil {
		return nil, fmt.Errorf("starlarkwasm: %w", err)
	}
	b := &Backend{
		maxSteps:    o.MaxSteps,
		maxResult:   o.MaxResultBytes,
		mode:        o.Mode,
		maxRestores: park.MaxRestores,
	}
	b.pools = b.newPools(o.PoolSize)
	if b.mode == ModeParked {
		peng, err := engineFor(dir, true)
		if err != nil {
			return nil, err
		}
		// The passes' proofs (the static-tables pass above all) are New's
		// to check: a module they refuse runs fresh.
		if _, err := peng.rewritten(); err != nil {
			b.parkedErr, b.mode = fmt.Errorf("starlarkwasm: parked mode: %w", err), ModeFresh
		} else {
			b.peng = peng
		}
	}
	var rt wasmrun.Runtime[wazero.CompiledModule, facts] = (*parkedRuntime)(b)
	if b.mode == ModeFresh {
		eng, err := engineFor(dir, false)
		if err != nil {
			return nil, err
		}
		b.eng, rt = eng, (*engineRuntime)(b)
	}
	b.core = wasmrun.New("starlarkwasm",
		wasmrun.Bounds{DefaultWallClock: DefaultWallClock, DefaultMemoryBytes: DefaultMemoryBytes, MaxMemoryBytes: MaxMemoryBytes},
		wasmrun.ColdStart{Base: o.ColdStartAllowance, PerMiB: DefaultColdStartPerMiB},
		rt)
	return b, nil
}

// Mode is the mode the backend runs in: the one Options asked for, except
// that ModeParked falls back to ModeFresh when the module cannot be proven
// restorable (see ParkedModeError).
func (b *Backend) Mode() Mode { return b.mode }

// ParkedModeError is nil unless ModeParked was asked for and New fell
// back to ModeFresh: then it says why, an error wrapping the refusal of a
// pass of internal/wasm/rewrite.
func (b *Backend) ParkedModeError() error { return b.parkedErr }

// Warm compiles the module (and fills the compilation cache) ahead of the
// first request; in ModeParked it also boots the pool of the default
// memory limit (runs without a log sink). It returns when that is done or
// ctx is done.
func (b *Backend) Warm(ctx context.Context) error {
	return b.core.Warm(ctx, func(ctx context.Context) error {
		if b.mode == ModeFresh {
			_, err := b.eng.compiledModule(ctx)
			return err
		}
		if _, err := b.peng.compiledModule(ctx); err != nil {
			return err
		}
		if p := b.pools.For(poolKey{memoryBytes: DefaultMemoryBytes}); p != nil {
			return p.Warm(ctx, isReady)
		}
		return nil
	})
}

// Close stops every run in flight and waits for them to return, and ends
// the parked instances (the process's runtime stays for the next
// backend). It is idempotent.
func (b *Backend) Close() error {
	return b.core.Close(func() error {
		b.instances.Wait()
		return nil
	})
}
