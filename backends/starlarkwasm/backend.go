package starlarkwasm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sandbank/sandbank/backends/starlark"
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
	// and converting them) when Options leave it zero; see
	// Options.ColdStartAllowance.
	DefaultColdStartAllowance = 10 * time.Second
	// DefaultColdStartPerMiB is what the allowance grows by per MiB of
	// input.
	DefaultColdStartPerMiB = time.Second
)

// maxStderrBytes bounds what a run keeps of the guest's stderr (the Go
// runtime's fatal errors; the script cannot write there).
const maxStderrBytes = 4 << 10

// ErrClosed is returned by Evaluate and Warm after Close.
var ErrClosed = errors.New("starlarkwasm: backend closed")

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
	// CompilationCacheDir, when set, keeps the compiled module in this
	// directory, so that another process skips the compile (about two
	// seconds). It must be a directory only this user can write. Empty
	// means an in-memory cache shared by the process.
	CompilationCacheDir string
}

// processCache is the in-memory compilation cache every backend of the
// process without a cache directory shares, so that only the first one
// pays the compile. It lives as long as the process.
var processCache = sync.OnceValue(wazero.NewCompilationCache)

// Backend runs every evaluation in a fresh instance of the guest module,
// in one wazero runtime. Build one with [New]; it is safe for concurrent
// use, and [Backend.Close] releases it.
type Backend struct {
	maxSteps, maxResult int64
	coldStart           time.Duration
	rt                  wazero.Runtime
	cache               wazero.CompilationCache // nil without a cache directory

	// compiled is closed when compiling finished; mod or compileErr is set.
	compileOnce sync.Once
	compiled    chan struct{}
	mod         wazero.CompiledModule
	compileErr  error

	// life is cancelled by Close; every run's context follows it.
	life     context.Context
	shutdown context.CancelFunc
	mu       sync.Mutex // guards closed and runs.Add
	closed   bool
	runs     sync.WaitGroup

	// observe, nil in production, sees the facts of every run.
	observe func(facts)
}

// New returns a starlark-wasm backend. A nil opts means defaults; a
// negative option is an error. The module is compiled by Warm or by the
// first Evaluate.
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
	cfg := wazero.NewRuntimeConfigCompiler().
		WithDebugInfoEnabled(false). // with it on, every guest exit costs tens of ms
		WithCloseOnContextDone(true) // the hard clock: a done context stops the guest
	var cache wazero.CompilationCache
	if o.CompilationCacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(o.CompilationCacheDir); err != nil {
			return nil, fmt.Errorf("starlarkwasm: compilation cache: %w", err)
		}
		cfg = cfg.WithCompilationCache(cache)
	} else {
		cfg = cfg.WithCompilationCache(processCache())
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		if cache != nil {
			_ = cache.Close(ctx)
		}
		return nil, fmt.Errorf("starlarkwasm: WASI: %w", err)
	}
	life, shutdown := context.WithCancel(context.Background())
	return &Backend{
		maxSteps:  o.MaxSteps,
		maxResult: o.MaxResultBytes,
		coldStart: o.ColdStartAllowance,
		rt:        rt,
		cache:     cache,
		compiled:  make(chan struct{}),
		life:      life,
		shutdown:  shutdown,
	}, nil
}

// Capabilities declares what the conformance kit proves for this backend:
// no network, a hard wall clock (the instance is stopped), the memory
// limit (linear memory cannot grow past it), the step budget as the CPU
// limit, and a fresh instance per run.
func (b *Backend) Capabilities() spi.Capabilities {
	return spi.Capabilities{
		Language:    Language,
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockHard,
		Memory:      true,
		CPU:         true,
		FreshPerRun: true,
	}
}

// Warm compiles the module (and fills the compilation cache) ahead of the
// first request. It returns when that is done or ctx is done.
func (b *Backend) Warm(ctx context.Context) error {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.runs.Done()
	_, err := b.compiledModule(ctx)
	return err
}

// Close stops every run in flight, waits for them to return, and releases
// the runtime, the compiled module and the cache. It is idempotent.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.shutdown()
	b.runs.Wait()
	ctx := context.Background()
	err := b.rt.Close(ctx)
	if b.cache != nil {
		err = errors.Join(err, b.cache.Close(ctx))
	}
	return err
}

// enter registers a run, or fails after Close.
func (b *Backend) enter() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.runs.Add(1)
	return nil
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
			b.mod, b.compileErr = b.rt.CompileModule(context.Background(), guestWASM)
			if b.compileErr != nil {
				b.compileErr = fmt.Errorf("starlarkwasm: compile: %w", b.compileErr)
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
