package starlarkwasm

import (
	"context"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sandbank/sandbank/internal/wasm/cache"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// engine is a wazero runtime with the guest module compiled into it,
// compiled on first use. Every backend of the process with the same cache
// directory shares one (engineFor), so that only the process's first
// backend pays the compile, or the load of the compiled code (about half
// a second from the cache, on a loaded machine): a run's start-up would
// otherwise carry it, and a host call's wall clock, which the effect
// counts from the backend's call, with it. Engines live as long as the
// process.
type engine struct {
	rt     wazero.Runtime
	dir    string        // the cache directory, or "" for none
	disk   *cache.Wazero // the sealed compilation cache in dir, or nil
	parked bool          // the module of parked instances (park.go), with its own WASI

	// rewriteOnce rewrites the guest once; wasm or rewriteErr is set.
	rewriteOnce sync.Once
	wasm        []byte
	rewriteErr  error

	// compiled is closed when compiling finished; mod or compileErr is set.
	compileOnce sync.Once
	compiled    chan struct{}
	mod         wazero.CompiledModule
	compileErr  error
}

// engineKey names an engine: its cache directory and its module.
type engineKey struct {
	dir    string
	parked bool
}

var (
	enginesMu sync.Mutex
	engines   = map[engineKey]*engine{}
)

// passes is the pass list of the module: the stop check alone for fresh
// instances, and for parked ones the passes of parkPasses (park.go).
func passes(parked bool) []wasmrewrite.Pass {
	if parked {
		return parkPasses
	}
	return []wasmrewrite.Pass{wasmrewrite.PreemptPass}
}

// guestKey names the rewritten guest in a cache directory
// (internal/wasm/cache): the input (the build's revision when it is the
// embedded guest of an unmodified tree, else its hash) and the pass list.
func guestKey(parked bool) string {
	input := cache.EmbeddedInput(guestWASM, embeddedGuest, "github.com/sandbank/sandbank")
	return cache.Key("starlarkwasm", input, wasmrewrite.Version(passes(parked)...))
}

// engineFor returns the process's engine for the cache directory dir (a
// directory cache.Resolve returned, or "" for none) and the module of
// fresh or parked instances, creating it on first use.
func engineFor(dir string, parked bool) (*engine, error) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if e, ok := engines[engineKey{dir, parked}]; ok {
		return e, nil
	}
	var compilation wazero.CompilationCache
	var disk *cache.Wazero
	if dir == "" {
		compilation = wazero.NewCompilationCache()
	} else {
		var err error
		if disk, err = cache.OpenWazero(dir, guestKey(parked)); err != nil {
			return nil, fmt.Errorf("starlarkwasm: compilation cache: %w", err)
		}
		compilation = disk.CompilationCache()
	}
	cfg := wazero.NewRuntimeConfigCompiler().
		WithDebugInfoEnabled(false). // with it on, every guest exit costs tens of ms
		WithCompilationCache(compilation)
	// The hard clock is the stop check the rewritten guest carries
	// (stopCheckGuest), not wazero's close-on-context-done, whose check
	// leaves compiled code for Go at every loop header.
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if !parked { // parked instances' host modules need the compiled module (compiledModule)
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			_ = rt.Close(ctx)
			return nil, fmt.Errorf("starlarkwasm: WASI: %w", err)
		}
		if err := wasmhost.InstantiateStopCheck(ctx, rt); err != nil {
			_ = rt.Close(ctx)
			return nil, fmt.Errorf("starlarkwasm: the stop check: %w", err)
		}
	}
	e := &engine{rt: rt, dir: dir, disk: disk, parked: parked, compiled: make(chan struct{})}
	engines[engineKey{dir, parked}] = e
	return e, nil
}

// rewritten is the guest module with the engine's passes, read from the
// cache directory when another process left it there, and rewritten
// otherwise (wazero's compilation cache keys on the bytes, so its
// compiled form is cached apart from the original's), once per engine. A
// pass that refuses the module (parked instances' static-tables proof)
// is its error.
func (e *engine) rewritten() ([]byte, error) {
	e.rewriteOnce.Do(func() {
		rewrite := func() ([]byte, error) { return wasmrewrite.RewriteWith(guestWASM, passes(e.parked)...) }
		if e.dir == "" {
			e.wasm, e.rewriteErr = rewrite()
		} else {
			e.wasm, e.rewriteErr = cache.Memo(e.dir, guestKey(e.parked)+".wasm", rewrite)
		}
		if e.rewriteErr != nil {
			e.rewriteErr = fmt.Errorf("starlarkwasm: rewriting the guest: %w", e.rewriteErr)
		}
	})
	return e.wasm, e.rewriteErr
}

// compiledModule returns the compiled module, compiling it on first use.
// Compiling runs on its own goroutine, so a caller whose ctx is done stops
// waiting while the compile goes on for the next caller.
func (e *engine) compiledModule(ctx context.Context) (wazero.CompiledModule, error) {
	e.compileOnce.Do(func() {
		go func() {
			defer close(e.compiled)
			wasm, err := e.rewritten()
			if err != nil {
				e.compileErr = err
				return
			}
			// The parked instances' host modules need only the module's
			// imports: they are set up on the other core while it compiles.
			hostErr := make(chan error, 1)
			if e.parked {
				go func() { hostErr <- instantiateParkedHost(context.Background(), e.rt, wasm) }()
			} else {
				hostErr <- nil
			}
			mod, err := e.rt.CompileModule(context.Background(), wasm)
			herr := <-hostErr
			switch {
			case err != nil:
				e.compileErr = fmt.Errorf("starlarkwasm: compile: %w", err)
				return
			case herr != nil:
				e.compileErr = herr
				return
			}
			e.mod = mod
			if e.disk != nil {
				e.disk.Seal() // what the compile wrote
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
