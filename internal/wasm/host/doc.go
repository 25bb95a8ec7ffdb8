// Package host holds the host-side wazero pieces that the engines
// running a WASI guest program share: [Isolate], the module configuration
// that gives a guest deterministic stand-ins for the host's clocks, sleep
// and randomness; [Allocator], which caps one run's linear memory at its
// limit; and [InstantiateStopCheck], the host side of the stop check that
// internal/wasm/rewrite puts in a module. It is kept apart from package guest, which a guest
// program compiled to WebAssembly imports too, so that the guest does not
// link wazero.
//
// Application code never uses this package.
package host
