//go:build cgo

package builtin

import (
	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/spi"
)

// cpuBudgetFuel is the wasmtime fuel budget of quickjs-wasmtime's
// [CPUBudgetFactory]: a loop spends it in well under a millisecond, while
// the wrapper still has enough to report the result of a short script.
const cpuBudgetFuel = 100_000

// cgoEngines lists the built-in backends that need cgo.
func cgoEngines() []engine {
	return []engine{{
		name:        wasmtime.Engine,
		javascript:  true,
		factory:     func() (spi.Backend, error) { return wasmtime.New(nil) },
		declare:     func() spi.Capabilities { return wasmtime.Declare(nil) },
		description: "QuickJS compiled to WebAssembly, run by wasmtime (cgo): faster, fuel as the CPU limit",
	}}
}

// cgoCPUBudgetFactory is CPUBudgetFactory for the engines that need cgo.
func cgoCPUBudgetFactory(engine string) spi.Factory {
	if engine == wasmtime.Engine {
		return func() (spi.Backend, error) { return wasmtime.New(&wasmtime.Options{Fuel: cpuBudgetFuel}) }
	}
	return nil
}

// cgoCacheFactory is CacheFactory for the engines that need cgo.
func cgoCacheFactory(engine, dir string) spi.Factory {
	if engine == wasmtime.Engine {
		return func() (spi.Backend, error) { return wasmtime.New(&wasmtime.Options{CacheDir: dir, NoCache: dir == ""}) }
	}
	return nil
}
