// Package starlarkwasm is the Starlark engine with a hard memory cap and a
// hard clock: the project's in-process Starlark engine (backends/starlark,
// go.starlark.net) compiled with GOOS=wasip1 GOARCH=wasm into a guest
// module (./guest, embedded as guest.wasm), run by wazero in a new
// instance per run. It registers as the engine "starlark-wasm"; the
// script contract, the value conversion, the step budget and the fixtures
// are exactly the in-process engine's, because the guest runs that very
// code.
//
//	b, err := starlarkwasm.New(nil)
//	…
//	e, err := effect.New(scripts, b, nil)
//
// Declared capabilities: Network none, WallClock hard (armed when the
// script starts, after its compile and its input's conversion), Memory
// true, CPU true (the step budget, Options.MaxSteps), FreshPerRun true,
// HostCalls true and Logs true.
//
// # Host calls and logs
//
// In a run with host functions the script has host.NAME(arg) and
// host_try(NAME, arg), as in the in-process engine: calls are made one at
// a time, in the script's order, a failure reaches the script as the
// error's message exactly, and time in a host call counts toward the wall
// clock. print writes to the request's log sink, every line cut at
// spi.MaxLogLineBytes; without a sink it goes nowhere. The run's Stats are
// not reported: the guest's clocks are fake.
//
// # Memory
//
// Each run's linear memory is capped at the request's memory limit (at
// most MaxMemoryBytes). Running out is limitExceeded memory, never a
// script error (inputTooLarge when it happens before the script starts; a
// script whose compile alone does not fit is inputTooLarge too).
//
// # Notes
//
// The module is compiled once per process, on first use or by Warm, and
// kept, sealed, in Options.CacheDir (by default os.UserCacheDir()/sandbank)
// for the next process. Every run starts a new Go runtime, and the
// interpreter is slower compiled to WebAssembly (docs/performance.md).
// starlark-wasm is the default engine of the language starlark: a memory
// bomb or one long built-in operation never reaches the host.
//
// # Security considerations
//
// The guest has no filesystem, no environment, fake clocks and seeded
// randomness; the script cannot reach the guest's stdout or stderr, and a
// printed line cannot pass for a record. How a run works over the guest
// protocol, and why each of these holds: see docs/RATIONALE.md R21.
package starlarkwasm
