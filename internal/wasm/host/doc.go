// Package host holds the host-side wazero pieces that the engines
// running a WASI guest program share: [Isolate], the module configuration
// that gives a guest deterministic stand-ins for the host's clocks, sleep
// and randomness; [Allocator], which caps one run's linear memory at its
// limit; and [StopCheck], the one host side of the stop check that
// internal/wasm/rewrite puts in a module (every engine's preemption host
// function, with an optional per-call [Budget] for a CPU budget), which
// [InstantiateStopCheck] and [ExportStopCheck] install. It is kept apart
// from package guest, which a guest program compiled to WebAssembly
// imports too, so that the guest does not link wazero.
//
// Application code never uses this package.
package host
