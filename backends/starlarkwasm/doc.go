// Package starlarkwasm is the Starlark engine with a hard memory cap and a
// hard clock: the project's in-process Starlark engine (backends/starlark,
// go.starlark.net) compiled with GOOS=wasip1 GOARCH=wasm into a guest
// module (./guest, embedded as guest.wasm), run by wazero. It registers as the engine "starlark-wasm"; the
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
// a time, in the script's order (Starlark has no asynchrony; the guest
// uses the one-call-at-a-time form of the host-call records), a failure reaches the script as the
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
// for the next process. By default (ModeParked) runs are served by parked
// instances: each boots the guest's Go runtime once, is snapshotted where
// the guest first reads its request, and is restored to that point before
// every run (memory, globals, clocks, random source), so an echo costs
// under a millisecond instead of a Go runtime's boot; a pool per memory
// limit, Options.PoolSize. Options.Mode = ModeFresh instantiates a new
// instance per run instead. Why a restore is as good as a new instance:
// docs/RATIONALE.md R21. The interpreter is slower compiled to
// WebAssembly (docs/performance.md).
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
