package quickjs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/wasm/cache"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// Engine is the engine name this backend registers under (in its default
// mode, ModeParked).
const Engine = "quickjs"

// EngineFresh is the engine name the backend registers under in
// ModeFresh, so that both modes can be listed and measured side by side.
const EngineFresh = "quickjs-fresh"

// Language is the script language this backend runs.
const Language = "javascript"

// ErrClosed is returned (wrapped) by Evaluate and Warm after Close; match
// it with errors.Is. It is the one ErrClosed of the wasm engines.
var ErrClosed = wasmrun.ErrClosed

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
)

// processCache is the in-memory compilation cache every backend of the
// process without a cache directory (NoCache) shares, so that only the first one
// pays the compile (about a second). It lives as long as the process.
var processCache = sync.OnceValue(wazero.NewCompilationCache)

// Backend runs every evaluation in a fresh or a restored instance of one
// compiled module, in one wazero runtime. Build one with [New]; it is
// safe for concurrent use, and [Backend.Close] releases it.
type Backend struct {
	set       settings
	wasm      []byte // the module compiled: QuickJS, rewritten with the stack pass and the stop check
	parkedErr error  // why ModeParked fell back to ModeFresh, or nil
	// layout is where the C stack lies in wasm's memory: the canary goes
	// at its bottom.
	layout jsguest.Layout
	rt     wazero.Runtime
	disk   *cache.Wazero // the sealed compilation cache, nil without a cache directory

	// compiled is closed when compiling finished; mod or compileErr is set.
	compileOnce sync.Once
	compiled    chan struct{}
	mod         wazero.CompiledModule
	compileErr  error

	// core is the run lifecycle (internal/wasm/run), over the runtime
	// (run.go); life and runs are its backend's life and group of runs.
	core *wasmrun.Engine[wazero.CompiledModule, ran]
	life context.Context
	runs *sync.WaitGroup

	// Parked mode: the pools by memory limit, and the instances' goroutines.
	pools     *park.Pools[int64, *instance]
	instances sync.WaitGroup
	boots     atomic.Int64 // instances started, for tests
	reuses    atomic.Int64 // runs that resumed a parked instance, for tests
	live      atomic.Int64 // instances whose goroutine runs, for tests

	// Test hooks, nil in production: args replaces jsguest.Args; observe
	// sees the facts of every run that reached the guest.
	args    func(memoryBytes int64) []string
	observe func(jsguest.Facts)
	// beforeWrite, nil in production, sees every write to a run's stdout
	// before the sink does, with the run's wall-clock expiry.
	beforeWrite func(p []byte, expireWallClock func())
	// Parked mode's test hooks, nil in production: onRun sees the
	// instance a run got; restored sees an instance restored to its park
	// point, just before the run's canary and input are written.
	onRun    func(*instance)
	restored func(*instance)
}

// New returns a QuickJS backend. A nil opts means defaults. It rewrites
// the embedded binary (once per process and pass list) with a C stack of
// its own and a bound check (and fails if it cannot: the backend refuses
// to run without its stack guard) and creates the wazero runtime; the
// module is compiled by Warm or by the first Evaluate.
func New(opts *Options) (*Backend, error) {
	set, err := opts.settings()
	if err != nil {
		return nil, err
	}
	return build(set)
}

// build is New with validated settings.
func build(set settings) (*Backend, error) {
	dir, err := cache.Resolve(set.CacheDir, set.NoCache)
	if err != nil {
		return nil, fmt.Errorf("quickjs: %w", err)
	}
	// The compiled entries' seals are checked while the module is read.
	disk, err := openDisk(dir, guestKey(set))
	if err != nil {
		return nil, err
	}
	bin, err := guestModule(set, dir)
	var parkedErr error
	if err != nil && set.mode == ModeParked && !errors.Is(err, errStackGuard) {
		// Parked mode's passes refused the module (its proofs do not hold
		// for this binary): a fresh backend that says why, never a parked
		// instance whose restore would be incomplete.
		parkedErr, set.mode = err, ModeFresh
		if disk, err = openDisk(dir, guestKey(set)); err != nil {
			return nil, err
		}
		bin, err = guestModule(set, dir)
	}
	if err != nil {
		return nil, err
	}
	cfg := wazero.NewRuntimeConfigCompiler().
		WithDebugInfoEnabled(false). // with it on, every guest exit costs 40-45 ms
		WithCloseOnContextDone(set.wazeroClose)
	if disk != nil {
		cfg = cfg.WithCompilationCache(disk.CompilationCache())
	} else {
		cfg = cfg.WithCompilationCache(processCache())
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	fail := func(err error) (*Backend, error) {
		_ = rt.Close(ctx)
		return nil, err
	}
	if err := instantiateHost(ctx, rt); err != nil {
		return fail(fmt.Errorf("quickjs: stack and stop check: %w", err))
	}
	if set.mode == ModeFresh { // parked mode instantiates its own WASI after compiling
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			return fail(fmt.Errorf("quickjs: WASI: %w", err))
		}
	}
	b := &Backend{
		set:       set,
		wasm:      bin.wasm,
		parkedErr: parkedErr,
		layout:    bin.layout,
		rt:        rt,
		disk:      disk,
		compiled:  make(chan struct{}),
	}
	b.pools = b.newPools(set.poolSize)
	b.core = newCore(b)
	b.life, b.runs = b.core.Life(), b.core.Runs()
	return b, nil
}

// openDisk opens the process's compilation cache of the module named key
// in dir (the process's, never closed); nil without a cache directory.
func openDisk(dir, key string) (*cache.Wazero, error) {
	if dir == "" {
		return nil, nil
	}
	disk, err := cache.OpenWazero(dir, key)
	if err != nil {
		return nil, fmt.Errorf("quickjs: compilation cache: %w", err)
	}
	return disk, nil
}

// Mode is the mode the backend runs in: the one Options asked for, except
// that ModeParked falls back to ModeFresh when the module cannot be
// proven restorable (see ParkedModeError).
func (b *Backend) Mode() Mode { return b.set.mode }

// ParkedModeError is nil unless ModeParked was asked for and New fell
// back to ModeFresh: then it says why, an error wrapping the refusal of
// parked mode's rewriting passes (internal/wasm/rewrite), such as a
// QuickJS binary that could write its function table, which a restore
// does not cover. Parked mode uses only wazero's public API, so the
// wazero version of a build does not matter. Runs are correct either
// way; fresh mode is slower per run.
func (b *Backend) ParkedModeError() error { return b.parkedErr }

// HostObjects declares what a script sees beyond ECMAScript's standard
// globals (print and console's logging methods, whose output goes nowhere
// a caller reads), so that the conformance kit fails anything else it
// finds. It makes the backend an spi.HostObjectDeclarer.
func (b *Backend) HostObjects() []string { return jsguest.HostObjects() }

// Warm compiles the module (and fills the compilation cache) ahead of the
// first request; in ModeParked it also boots the pool of parked instances
// for DefaultMemoryBytes (the effect's default limit). It returns when
// that is done or ctx is done.
func (b *Backend) Warm(ctx context.Context) error {
	return b.core.Warm(ctx, func(ctx context.Context) error {
		if _, err := b.compiledModule(ctx); err != nil {
			return err
		}
		if b.set.mode == ModeParked {
			if p := b.pools.For(DefaultMemoryBytes); p != nil {
				return p.Warm(ctx, isReady)
			}
		}
		return nil
	})
}

// Close stops every run in flight, waits for them to return, and releases
// the runtime and the compiled module. It is idempotent.
func (b *Backend) Close() error {
	return b.core.Close(func() error {
		b.instances.Wait()
		return b.rt.Close(context.Background())
	})
}

// compiledModule returns the compiled module, compiling it on first use.
// Compiling runs on its own goroutine, so a caller whose ctx is done stops
// waiting while the compile goes on for the next caller.
func (b *Backend) compiledModule(ctx context.Context) (wazero.CompiledModule, error) {
	b.compileOnce.Do(func() {
		b.runs.Add(1) // Close waits for the compile to finish
		go func() {
			defer b.runs.Done()
			defer close(b.compiled)
			// Parked mode's WASI needs only the module's imports: it is
			// set up on the other core while the module compiles.
			wasiErr := make(chan error, 1)
			if b.set.mode == ModeParked {
				go func() { wasiErr <- parkedWASI.Instantiate(context.Background(), b.rt, b.wasm) }()
			} else {
				wasiErr <- nil
			}
			mod, err := b.rt.CompileModule(context.Background(), b.wasm)
			werr := <-wasiErr
			switch {
			case err != nil:
				b.compileErr = fmt.Errorf("quickjs: compile: %w", err)
				return
			case werr != nil:
				b.compileErr = fmt.Errorf("quickjs: WASI: %w", werr)
				return
			}
			b.mod = mod
			if b.disk != nil {
				b.disk.Seal() // what the compile wrote
			}
		}()
	})
	select {
	case <-b.compiled:
		return b.mod, b.compileErr
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
