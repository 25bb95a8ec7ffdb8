//go:build cgo

package wasmtime

import (
	"context"
	"fmt"

	wt "github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/wasm/cache"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// Engine is the engine name this backend registers under.
const Engine = "quickjs-wasmtime"

// Language is the script language this backend runs.
const Language = "javascript"

// ErrClosed is returned (wrapped) by Evaluate and Warm after Close; match
// it with errors.Is. It is the one ErrClosed of the wasm engines.
var ErrClosed = wasmrun.ErrClosed

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
)

// Backend runs every evaluation in a new store and instance of one
// compiled module, shared by every backend of the process. Build one with
// [New]; it is safe for concurrent use, and [Backend.Close] releases it.
type Backend struct {
	set    settings
	layout jsguest.Layout
	rt     *runtimeState // counts fuel only when set.fuel > 0

	// core is the run lifecycle (internal/wasm/run), over the runtime
	// (run.go).
	core *wasmrun.Engine[*wt.Module, ran]

	// observe, nil in production, sees every run that reached the
	// guest: its facts and the fuel it had left.
	observe func(r *run, f jsguest.Facts, fuelLeft uint64)
	// beforeWrite, nil in production, sees every write to a run's stdout
	// before the sink does, with the run's wall-clock expiry.
	beforeWrite func(p []byte, expireWallClock func())
}

// New returns a QuickJS-on-wasmtime backend. A nil opts means defaults.
// It rewrites the embedded binary with a C stack of its own and its bound
// check, once per process (and fails if it cannot: the backend refuses
// to run without its stack guard), and picks the process-wide wasmtime
// engine that counts fuel when opts sets a CPU budget (Options.Fuel), the
// one that does not otherwise; the module is compiled for that engine by
// Warm or by the first Evaluate, once per process and engine.
func New(opts *Options) (*Backend, error) {
	set, err := opts.settings()
	if err != nil {
		return nil, err
	}
	if set.CacheDir, err = cache.Resolve(set.CacheDir, set.NoCache); err != nil {
		return nil, fmt.Errorf("wasmtime: %w", err)
	}
	g := guarded()
	if g.err != nil {
		return nil, g.err
	}
	rt, err := processRuntime(set.fuel > 0)
	if err != nil {
		return nil, err
	}
	b := &Backend{set: set, layout: g.layout, rt: rt}
	b.core = wasmrun.New("wasmtime",
		wasmrun.Bounds{DefaultWallClock: DefaultWallClock, DefaultMemoryBytes: DefaultMemoryBytes, MaxMemoryBytes: MaxMemoryBytes},
		set.ColdStart,
		(*engineRuntime)(b))
	return b, nil
}

// HostObjects declares what a script sees beyond ECMAScript's standard
// globals (print and console's logging methods, whose output goes nowhere
// a caller reads), so that the conformance kit fails anything else it
// finds. It makes the backend an spi.HostObjectDeclarer.
func (b *Backend) HostObjects() []string { return jsguest.HostObjects() }

// Warm compiles the module (or loads it from the cache directory) ahead
// of the first request. It returns when that finished or ctx is done.
func (b *Backend) Warm(ctx context.Context) error {
	return b.core.Warm(ctx, func(ctx context.Context) error {
		_, err := b.module(ctx)
		return err
	})
}

// Close stops every run in flight and waits for them to return. The
// compiled module and the engine are process-wide and stay for the next
// backend. Close is idempotent.
func (b *Backend) Close() error { return b.core.Close(nil) }

// module returns the compiled module, waiting for the process-wide
// compile; a caller whose ctx is done stops waiting while the compile
// goes on for the next caller.
func (b *Backend) module(ctx context.Context) (*wt.Module, error) {
	m := moduleFor(b.rt, b.set.CacheDir)
	select {
	case <-m.done:
		return m.mod, m.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
