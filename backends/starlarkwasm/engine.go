package starlarkwasm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// engine is a wazero runtime with the guest module compiled into it,
// compiled on first use. Every backend of the process without a
// compilation cache directory shares one (processEngine), so that only the
// process's first backend pays the compile and the load of the compiled
// code (about half a second from the cache, on a loaded machine): a run's
// start-up would otherwise carry it, and a host call's wall clock, which
// the effect counts from the backend's call, with it. A backend with a
// cache directory has its own, which its Close releases.
type engine struct {
	rt    wazero.Runtime
	cache wazero.CompilationCache // the directory cache, or nil

	// compiled is closed when compiling finished; mod or compileErr is set.
	compileOnce sync.Once
	compiling   sync.WaitGroup
	compiled    chan struct{}
	mod         wazero.CompiledModule
	compileErr  error
}

// processEngine is the engine of every backend without a cache directory.
// It lives as long as the process.
var processEngine = sync.OnceValues(func() (*engine, error) {
	return newEngine(processCache(), nil)
})

// stopCheckGuest is the guest module with internal/wasm/rewrite's stop
// check, rewritten once per process (wazero's compilation cache keys on
// the bytes, so its compiled form is cached apart from the original's).
var stopCheckGuest = sync.OnceValues(func() ([]byte, error) { return wasmrewrite.Rewrite(guestWASM) })

// processCache is the in-memory compilation cache of processEngine. It
// lives as long as the process.
var processCache = sync.OnceValue(wazero.NewCompilationCache)

// newDirEngine returns an engine whose compiled module is kept in dir.
func newDirEngine(dir string) (*engine, error) {
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("starlarkwasm: compilation cache: %w", err)
	}
	e, err := newEngine(cache, cache)
	if err != nil {
		_ = cache.Close(context.Background())
	}
	return e, err
}

// newEngine returns an engine compiling into cache; owned, when not nil,
// is closed with the engine.
func newEngine(cache, owned wazero.CompilationCache) (*engine, error) {
	cfg := wazero.NewRuntimeConfigCompiler().
		WithDebugInfoEnabled(false). // with it on, every guest exit costs tens of ms
		WithCompilationCache(cache)
	// The hard clock is the stop check the rewritten guest carries
	// (stopCheckGuest), not wazero's close-on-context-done, whose check
	// leaves compiled code for Go at every loop header.
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("starlarkwasm: WASI: %w", err)
	}
	if err := wasmhost.InstantiateStopCheck(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("starlarkwasm: the stop check: %w", err)
	}
	return &engine{rt: rt, cache: owned, compiled: make(chan struct{})}, nil
}

// compiledModule returns the compiled module, compiling it on first use.
// Compiling runs on its own goroutine, so a caller whose ctx is done stops
// waiting while the compile goes on for the next caller.
func (e *engine) compiledModule(ctx context.Context) (wazero.CompiledModule, error) {
	e.compileOnce.Do(func() {
		e.compiling.Add(1) // close waits for the compile to finish
		go func() {
			defer e.compiling.Done()
			defer close(e.compiled)
			wasm, err := stopCheckGuest()
			if err != nil {
				e.compileErr = fmt.Errorf("starlarkwasm: rewriting the guest: %w", err)
				return
			}
			e.mod, e.compileErr = e.rt.CompileModule(context.Background(), wasm)
			if e.compileErr != nil {
				e.compileErr = fmt.Errorf("starlarkwasm: compile: %w", e.compileErr)
			}
		}()
	})
	select {
	case <-e.compiled:
		return e.mod, e.compileErr
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// close waits for a compile in flight and releases the runtime, the
// compiled module and the owned cache.
func (e *engine) close() error {
	e.compiling.Wait()
	ctx := context.Background()
	err := e.rt.Close(ctx)
	if e.cache != nil {
		err = errors.Join(err, e.cache.Close(ctx))
	}
	return err
}
