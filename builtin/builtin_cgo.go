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

// wasmtimeFuel is the CPU budget quickjs-wasmtime is registered with:
// 2^40 units of wasmtime fuel, which QuickJS spends in one and a half to
// three minutes of work (6 to 14 billion units a second). It is a bound,
// not a budget a script meets; it makes quickjs-wasmtime the JavaScript
// engine that declares a CPU budget (registry.Requirements{CPU: true}),
// at the cost of counting fuel in every run (about a fifth of a CPU-bound
// run: docs/performance.md). wasmtime.New(nil) counts none.
const wasmtimeFuel = 1 << 40

// wasmtimeOptions are the options quickjs-wasmtime is registered with.
func wasmtimeOptions() *wasmtime.Options { return &wasmtime.Options{Fuel: wasmtimeFuel} }

// cgoEngines lists the built-in backends that need cgo.
func cgoEngines() []engine {
	return []engine{{
		name:        wasmtime.Engine,
		javascript:  true,
		factory:     func() (spi.Backend, error) { return wasmtime.New(wasmtimeOptions()) },
		declare:     func() spi.Capabilities { return wasmtime.Declare(wasmtimeOptions()) },
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
		return func() (spi.Backend, error) {
			o := wasmtimeOptions()
			o.CacheDir, o.NoCache = dir, dir == ""
			return wasmtime.New(o)
		}
	}
	return nil
}
