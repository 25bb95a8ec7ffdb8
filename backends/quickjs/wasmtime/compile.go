//go:build cgo

package wasmtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	wt "github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/sandbank/sandbank/internal/wasm/cache"
)

// engineConfig names every engine setting that changes the compiled code;
// it is part of the compiled-module cache key, with fuelConfig for the
// engine that counts fuel.
const (
	engineConfig = "cranelift;opt=speed;epoch-interruption"
	fuelConfig   = ";consume-fuel"
)

// bindingModule is the Go module of the wasmtime binding; its version is
// part of the cache key.
const bindingModule = "github.com/bytecodealliance/wasmtime-go/v39"

// maxWasmStack is the native stack wasm code may use: 2 MiB, a quarter
// of the 8 MiB native stack of the threads Go runs cgo calls on. It binds
// before the guest's C stack (stack.go): a plain JavaScript recursion
// takes about 670 bytes of it a frame (3,112 frames fit), parsing JSON
// about 190 bytes a level of nesting.
const maxWasmStack = 2 << 20

// runtimeState is a process-wide wasmtime engine and its linker. There
// are two, each made on first use and shared by every backend of the
// process that needs it, so the module is compiled at most once per
// process and engine: one counts fuel (the code checks and spends fuel in
// every block, loop head and call), for the backends with a CPU budget
// (Options.Fuel); the other does not, for the backends without one, whose
// runs pay nothing for fuel. Both stop a run through epoch interruption
// (interrupt.go), which keeps the wall clock, the caller's cancellation
// and Close hard whichever engine runs.
type runtimeState struct {
	engine *wt.Engine
	linker *wt.Linker
	// fuel is true for the engine that counts fuel: only its stores take
	// a budget (wasmtime refuses SetFuel on the other).
	fuel bool
	// config is the engine's part of the cache key.
	config string
}

var processRuntimes = [2]func() (*runtimeState, error){
	sync.OnceValues(func() (*runtimeState, error) { return newRuntime(false) }),
	sync.OnceValues(func() (*runtimeState, error) { return newRuntime(true) }),
}

// processRuntime returns the process-wide engine that counts fuel, or the
// one that does not.
func processRuntime(fuel bool) (*runtimeState, error) {
	if fuel {
		return processRuntimes[1]()
	}
	return processRuntimes[0]()
}

func newRuntime(fuel bool) (*runtimeState, error) {
	cfg := wt.NewConfig()
	cfg.SetStrategy(wt.StrategyCranelift)
	cfg.SetCraneliftOptLevel(wt.OptLevelSpeed)
	cfg.SetEpochInterruption(true)
	cfg.SetConsumeFuel(fuel)
	cfg.SetParallelCompilation(true)
	// Room for deep recursion: with the default 512 KiB, parsing an input
	// nested about 2,700 deep exhausted the native stack. See
	// maxWasmStack and stack.go.
	cfg.SetMaxWasmStack(maxWasmStack)
	eng := wt.NewEngineWithConfig(cfg)
	linker, err := newLinker(eng)
	if err != nil {
		return nil, err
	}
	config := engineConfig
	if fuel {
		config += fuelConfig
	}
	return &runtimeState{engine: eng, linker: linker, fuel: fuel, config: config}, nil
}

// compiledModule is the compiled QuickJS module for one cache directory
// ("" for none), compiled at most once per process.
type compiledModule struct {
	once sync.Once
	done chan struct{}
	mod  *wt.Module
	err  error
	// fromCache is true when the module was deserialized from the cache.
	fromCache bool
}

var (
	modulesMu sync.Mutex
	modules   = map[moduleKey]*compiledModule{}
)

// moduleKey names one compile: the engine's and the cache directory's.
type moduleKey struct {
	fuel     bool
	cacheDir string
}

// moduleFor returns the process-wide compile of the module for rt's
// engine and cacheDir, starting it on its own goroutine on first use.
func moduleFor(rt *runtimeState, cacheDir string) *compiledModule {
	key := moduleKey{fuel: rt.fuel, cacheDir: cacheDir}
	modulesMu.Lock()
	m, ok := modules[key]
	if !ok {
		m = &compiledModule{done: make(chan struct{})}
		modules[key] = m
	}
	modulesMu.Unlock()
	m.once.Do(func() {
		go func() {
			defer close(m.done)
			g := guarded()
			if g.err != nil {
				m.err = g.err
				return
			}
			m.mod, m.fromCache, m.err = loadModule(rt.engine, rt.config, cacheDir, g.wasm)
		}()
	})
	return m
}

// loadModule compiles wasm, or deserializes it from cacheDir when a
// whole entry for this exact binding, engine configuration and binary is
// there (internal/wasm/cache seals it with its SHA-256, so a damaged one
// costs a recompile); after a compile it writes the entry (best effort: a
// cache that cannot be written only costs the next process a compile).
// config is the engine's configuration (runtimeState.config).
func loadModule(eng *wt.Engine, config, cacheDir string, wasm []byte) (*wt.Module, bool, error) {
	if cacheDir == "" {
		mod, err := wt.NewModule(eng, wasm)
		if err != nil {
			return nil, false, fmt.Errorf("wasmtime: compile: %s", firstLine(err.Error()))
		}
		return mod, false, nil
	}
	name := cacheName(config, wasm)
	if mod, ok := readCache(eng, cacheDir, name); ok {
		return mod, true, nil
	}
	mod, err := wt.NewModule(eng, wasm)
	if err != nil {
		return nil, false, fmt.Errorf("wasmtime: compile: %s", firstLine(err.Error()))
	}
	if ser, err := mod.Serialize(); err == nil {
		_ = cache.Write(cacheDir, name, ser)
	}
	return mod, false, nil
}

// cacheName is the file name of the cache entry: a hash of the binding's
// version, the engine configuration, the platform and the wasm binary.
func cacheName(config string, wasm []byte) string {
	return cacheKey(bindingVersion(), config, wasm)
}

func cacheKey(version, config string, wasm []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s@%s\n%s\n%s/%s\n", bindingModule, version, config, runtime.GOOS, runtime.GOARCH)
	sum := sha256.Sum256(wasm)
	h.Write(sum[:])
	return "quickjs-" + hex.EncodeToString(h.Sum(nil)[:16]) + ".cwasm"
}

// bindingVersion is the wasmtime binding's module version from the build
// information, or "unknown" where the build carries none (test binaries):
// the module path still names the major version, and wasmtime itself
// refuses to deserialize code compiled by another version.
func bindingVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == bindingModule {
				if d.Replace != nil {
					return d.Version + "=>" + d.Replace.Path + "@" + d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

// readCache deserializes the entry name in dir when it is whole.
func readCache(eng *wt.Engine, dir, name string) (*wt.Module, bool) {
	body, ok := cache.Read(dir, name)
	if !ok {
		return nil, false
	}
	mod, err := wt.NewModuleDeserialize(eng, body)
	if err != nil {
		return nil, false
	}
	return mod, true
}
