package builtin

import (
	"fmt"
	"io"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/fixtures"
	jsfixtures "github.com/sandbank/sandbank/fixtures/javascript"
	starlarkfixtures "github.com/sandbank/sandbank/fixtures/starlark"
	wasmfixtures "github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// engine describes one built-in backend.
type engine struct {
	name        string
	factory     spi.Factory
	description string
	// isDefault makes the engine its language's default.
	isDefault bool
}

// engines lists every built-in backend, in registration order (by name:
// the default of a language is set explicitly, never implied by the order).
func engines() []engine {
	return []engine{
		{
			name:        "extism",
			factory:     func() (spi.Backend, error) { return extism.New(nil) },
			description: "Extism WebAssembly plugins, run by wazero",
		},
		{
			name:        "goja",
			factory:     func() (spi.Backend, error) { return goja.New(nil) },
			description: "goja, JavaScript interpreted in Go",
		},
		{
			name:        "quickjs",
			factory:     func() (spi.Backend, error) { return quickjs.New(nil) },
			description: "QuickJS compiled to WebAssembly, run by wazero, parked instances restored per run",
			isDefault:   true,
		},
		{
			name:        quickjs.EngineFresh,
			factory:     func() (spi.Backend, error) { return quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh}) },
			description: "QuickJS compiled to WebAssembly, run by wazero, a new instance per run",
		},
		{
			name:        "starlark",
			factory:     func() (spi.Backend, error) { return starlark.New(nil) },
			description: "go.starlark.net, a step budget as the CPU limit",
		},
	}
}

// Register adds every built-in backend to r (extism, goja, quickjs,
// quickjs-fresh — the same engine with a new instance per run — and
// starlark; quickjs-wasmtime too in a build with cgo), and makes quickjs
// the default engine of "javascript". Each entry's capabilities are read
// from a backend built by the entry's own factory, which is then closed.
//
// Register panics, like [registry.Registry.Register], when a built-in
// backend cannot be built with default options or an engine is already
// registered in r: both are programmer errors, found at start-up.
func Register(r *registry.Registry) {
	for _, e := range append(engines(), cgoEngines()...) {
		caps, err := declaration(e.factory)
		if err != nil {
			panic(fmt.Sprintf("builtin: engine %q: %v", e.name, err))
		}
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
}

// declaration builds a backend with factory, reads its capabilities and
// closes it when it is an io.Closer.
func declaration(factory spi.Factory) (spi.Capabilities, error) {
	b, err := factory()
	if err != nil {
		return spi.Capabilities{}, fmt.Errorf("building the backend: %w", err)
	}
	if b == nil {
		return spi.Capabilities{}, fmt.Errorf("the factory returned a nil backend")
	}
	caps := b.Capabilities()
	if c, ok := b.(io.Closer); ok {
		if err := c.Close(); err != nil {
			return spi.Capabilities{}, fmt.Errorf("closing the backend: %w", err)
		}
	}
	return caps, nil
}

// Fixtures returns the conformance fixture set Sandbank ships for language
// ("javascript", "starlark" or "wasm"), and false for any other language.
func Fixtures(language string) (*fixtures.Set, bool) {
	switch language {
	case "javascript":
		set := jsfixtures.Set()
		return &set, true
	case "starlark":
		set := starlarkfixtures.Set()
		return &set, true
	case "wasm":
		set := wasmfixtures.Set()
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
	switch engine {
	case "starlark":
		return func() (spi.Backend, error) { return starlark.New(&starlark.Options{MaxSteps: CPUBudgetSteps}) }
	default:
		return cgoCPUBudgetFactory(engine)
	}
}

// CacheFactory returns a factory of the named built-in engine, configured
// exactly as Register registers it plus a compiled-module cache in dir, or
// nil when the engine has no cache directory option (goja and starlark
// compile nothing to machine code; extism's cache is in memory only). The
// directory must be one this process owns: a compiled module read from it
// is trusted.
func CacheFactory(engine, dir string) spi.Factory {
	switch engine {
	case quickjs.Engine:
		return func() (spi.Backend, error) {
			return quickjs.New(&quickjs.Options{CompilationCacheDir: dir})
		}
	case quickjs.EngineFresh:
		return func() (spi.Backend, error) {
			return quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh, CompilationCacheDir: dir})
		}
	default:
		return cgoCacheFactory(engine, dir)
	}
}
