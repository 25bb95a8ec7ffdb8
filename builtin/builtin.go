package builtin

import (
	"fmt"
	"strings"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/backends/starlarknative"
	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/fixtures"
	jsfixtures "github.com/sandbank/sandbank/fixtures/javascript"
	pyfixtures "github.com/sandbank/sandbank/fixtures/python"
	starlarkfixtures "github.com/sandbank/sandbank/fixtures/starlark"
	tsfixtures "github.com/sandbank/sandbank/fixtures/typescript"
	wasmfixtures "github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// engine describes one built-in backend.
type engine struct {
	name    string
	factory spi.Factory
	// declare returns the capabilities a backend built by factory declares,
	// without building one (the backend package's Declare).
	declare     func() spi.Capabilities
	description string
	// isDefault makes the engine its language's default.
	isDefault bool
	// javascript marks a JavaScript engine, which is also registered as
	// TypeScript.
	javascript bool
}

// engines lists every built-in backend, in registration order (by name:
// the default of a language is set explicitly, never implied by the order).
func engines() []engine {
	return []engine{
		{
			name:        "extism",
			factory:     func() (spi.Backend, error) { return extism.New(nil) },
			declare:     func() spi.Capabilities { return extism.Declare(nil) },
			description: "Extism WebAssembly plugins, run by wazero",
		},
		{
			name:        "goja",
			javascript:  true,
			factory:     func() (spi.Backend, error) { return goja.New(nil) },
			declare:     func() spi.Capabilities { return goja.Declare(nil) },
			description: "goja, JavaScript interpreted in Go (soft wall clock: a stopped run still inside a native operation counts against the engine until it ends)",
		},
		{
			name:        "quickjs",
			javascript:  true,
			factory:     func() (spi.Backend, error) { return quickjs.New(nil) },
			declare:     func() spi.Capabilities { return quickjs.Declare(nil) },
			description: "QuickJS compiled to WebAssembly, run by wazero, parked instances restored per run",
			isDefault:   true,
		},
		{
			name:        quickjs.EngineFresh,
			javascript:  true,
			factory:     func() (spi.Backend, error) { return quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh}) },
			declare:     func() spi.Capabilities { return quickjs.Declare(&quickjs.Options{Mode: quickjs.ModeFresh}) },
			description: "QuickJS compiled to WebAssembly, run by wazero, a new instance per run",
		},
		{
			name:        "starlark",
			factory:     func() (spi.Backend, error) { return starlark.New(nil) },
			declare:     func() spi.Capabilities { return starlark.Declare(nil) },
			description: "go.starlark.net, a step budget as the CPU limit",
		},
		{
			name:        starlarkwasm.Engine,
			factory:     func() (spi.Backend, error) { return starlarkwasm.New(nil) },
			declare:     func() spi.Capabilities { return starlarkwasm.Declare(nil) },
			description: "go.starlark.net compiled to WebAssembly, run by wazero, parked instances restored per run: memory cap, hard clock, step budget",
			isDefault:   !nativeStarlark(),
		},
	}
}

// Register adds every built-in backend to r (extism, goja, quickjs,
// quickjs-fresh — the same engine with a new instance per run —,
// starlark and starlark-wasm; quickjs-wasmtime too in a build with cgo;
// python, the default of "python", on a machine that can run its sandbox:
// [Missing] says why not otherwise; starlark-native on Linux amd64 and
// arm64 where it can confine its children), and for each
// JavaScript engine NAME a TypeScript engine NAME-ts, the same engine
// behind package typescript. It makes quickjs the default engine of
// "javascript", quickjs-ts that of "typescript" and starlark-native that
// of "starlark" where it is registered, else starlark-wasm (the
// in-process starlark engine bounds no memory: it is for trusted
// scripts, by name only).
//
// Register builds no backend: each entry's capabilities are its backend
// package's declaration for the entry's options (the package's Declare,
// which its backend's Capabilities method returns too), and a TypeScript
// entry's are typescript.Declare of its JavaScript engine's. An entry's
// factory builds its backend when a caller first needs one.
//
// Register panics, like [registry.Registry.Register], when an engine is
// already registered in r: a programmer error, found at start-up.
func Register(r *registry.Registry) {
	registerAll(r, append(append(append(engines(), cgoEngines()...), machineEngines()...), nativeStarlarkEngines()...))
}

// registerAll is Register for the engines es.
func registerAll(r *registry.Registry, es []engine) {
	for _, e := range es {
		caps := e.declare()
		register(r, e, caps)
		if !e.javascript {
			continue
		}
		ts := engine{
			name:        e.name + TypeScriptSuffix,
			factory:     typeScriptFactory(e.factory),
			description: "TypeScript (types stripped by esbuild) on " + e.name,
			isDefault:   e.isDefault,
		}
		register(r, ts, typescript.Declare(caps))
	}
}

// TypeScriptSuffix ends the name of every built-in TypeScript engine: the
// JavaScript engine it runs on, plus this.
const TypeScriptSuffix = "-ts"

// register adds e to r with caps, and makes it its language's default
// when it is one.
func register(r *registry.Registry, e engine, caps spi.Capabilities) {
	r.Register(registry.Entry{
		Engine:       e.name,
		Language:     caps.Language,
		Capabilities: caps,
		Factory:      e.factory,
		Description:  e.description,
	})
	if e.isDefault {
		if err := r.SetDefault(caps.Language, e.name); err != nil {
			panic(fmt.Sprintf("builtin: %v", err))
		}
	}
}

// typeScriptFactory returns a factory of js's backends wrapped for
// TypeScript, or nil when js is nil.
func typeScriptFactory(js spi.Factory) spi.Factory {
	if js == nil {
		return nil
	}
	return func() (spi.Backend, error) {
		b, err := js()
		if err != nil {
			return nil, err
		}
		return typescript.Wrap(b, nil)
	}
}

// javaScriptEngine returns the JavaScript engine a TypeScript engine's
// name names, and whether the name is one.
func javaScriptEngine(name string) (string, bool) {
	js, ok := strings.CutSuffix(name, TypeScriptSuffix)
	if !ok {
		return "", false
	}
	for _, e := range append(engines(), cgoEngines()...) {
		if e.name == js && e.javascript {
			return js, true
		}
	}
	return "", false
}

// Fixtures returns the conformance fixture set Sandbank ships for language
// ("javascript", "python", "starlark", "typescript" or "wasm"), and false for any
// other language.
func Fixtures(language string) (*fixtures.Set, bool) {
	switch language {
	case "javascript":
		set := jsfixtures.Set()
		return &set, true
	case "starlark":
		set := starlarkfixtures.Set()
		return &set, true
	case "typescript":
		set := tsfixtures.Set()
		return &set, true
	case "wasm":
		set := wasmfixtures.Set()
		return &set, true
	case "python":
		set := pyfixtures.Set()
		return &set, true
	default:
		return nil, false
	}
}

// CPUBudgetSteps is the Starlark step budget of [CPUBudgetFactory]: a
// hundredth of the backend's default, so that the conformance kit's loop
// runs out of it in well under a millisecond of interpretation.
const CPUBudgetSteps = 10_000

// CPUBudgetFactory returns a factory of the named built-in engine
// configured with a small CPU budget, for the conformance kit's cpu_budget
// case, or nil when the engine has no CPU budget option.
func CPUBudgetFactory(engine string) spi.Factory {
	if js, ok := javaScriptEngine(engine); ok {
		return typeScriptFactory(CPUBudgetFactory(js))
	}
	switch engine {
	case "starlark":
		return func() (spi.Backend, error) { return starlark.New(&starlark.Options{MaxSteps: CPUBudgetSteps}) }
	case starlarkwasm.Engine:
		return func() (spi.Backend, error) {
			return starlarkwasm.New(&starlarkwasm.Options{MaxSteps: CPUBudgetSteps})
		}
	case starlarknative.Engine:
		return func() (spi.Backend, error) {
			return starlarknative.New(&starlarknative.Options{MaxSteps: CPUBudgetSteps})
		}
	case python.Engine:
		return machineCPUBudgetFactory(engine)
	default:
		return cgoCPUBudgetFactory(engine)
	}
}

// CacheFactory returns a factory of the named built-in engine, configured
// exactly as Register registers it but with its compiled-module cache in
// dir instead of the default directory (os.UserCacheDir()/sandbank), or
// nil when the engine has no cache directory option (goja and starlark
// compile nothing to machine code; extism's cache is in memory only).
// python keeps there its check of the machine, not compiled code. An
// empty dir means no cache on disk at all (the backends' NoCache). The
// backend seals every entry and refuses a directory others can write.
func CacheFactory(engine, dir string) spi.Factory {
	if js, ok := javaScriptEngine(engine); ok {
		return typeScriptFactory(CacheFactory(js, dir))
	}
	switch engine {
	case quickjs.Engine:
		return func() (spi.Backend, error) {
			return quickjs.New(&quickjs.Options{CacheDir: dir, NoCache: dir == ""})
		}
	case quickjs.EngineFresh:
		return func() (spi.Backend, error) {
			return quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh, CacheDir: dir, NoCache: dir == ""})
		}
	case starlarkwasm.Engine:
		return func() (spi.Backend, error) {
			return starlarkwasm.New(&starlarkwasm.Options{CacheDir: dir, NoCache: dir == ""})
		}
	case python.Engine:
		return machineCacheFactory(engine, dir)
	default:
		return cgoCacheFactory(engine, dir)
	}
}
