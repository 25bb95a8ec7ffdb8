// Package run is the one run lifecycle of the wasm guest engines
// (backends/quickjs on wazero, fresh and parked, backends/quickjs/wasmtime
// and backends/starlarkwasm): each is a [Runtime] of an [Engine], as
// wazero's interpreter and compiler are engines behind its
// internal/wasm/engine.go.
//
// The engine owns what every runtime shares: the limits' normalisation
// ([Bounds]), the backend's life (Warm and Close over a WaitGroup, one
// [ErrClosed]), and, per run ([Run]), the start-up phases, the
// cold-start allowance and its [StartupError], the script's wall clock
// armed by the start record, the stdout sink sealed when that clock runs
// out, and the order in which a run concludes (the caller's
// cancellation, then the run's own stops, then the runtime's reading of
// what the guest left). A runtime only reaches the guest and reads what
// it left behind.
//
// Application code never uses this package; the backends expose its
// exported types under their own names.
package run
