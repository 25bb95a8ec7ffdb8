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
// # How a run works
//
// The host writes an internal/wasmguest payload to the guest's stdin (a
// per-run nonce, the script, the input). The guest reads it, calls the
// in-process engine's Evaluate without a clock of its own, and writes
// nonce-framed records to stdout: the start record once the script is
// compiled and its input converted (starlark.Options.OnStart), then one
// record with the result, the thrown error or the exhausted step budget.
// The host arms the script's wall clock when the start record arrives,
// seals stdout and stops the instance (wazero's close-on-context-done)
// when it runs out, and reads what the run left behind into an outcome.
//
// Declared capabilities: Network none (the guest has no sockets), WallClock
// hard, Memory true, CPU true (the step budget, Options.MaxSteps) and
// FreshPerRun true.
//
// # Memory
//
// Each run's linear memory is capped at the request's memory limit (at
// most MaxMemoryBytes) by the host's allocator: memory.grow past it fails
// and the guest's Go runtime ends with "fatal error: out of memory", which
// the host reads as limitExceeded memory (or inputTooLarge before the
// script started, once the guest began reading its input; or the memory
// limit when the Go runtime could not even boot). It is never a script
// error. The guest's Go runtime runs with a soft memory limit of seven
// eighths of the cap (debug.SetMemoryLimit), so the collector works harder
// before the cap is reached.
//
// # Notes
//
// The module (about 6 MB) is compiled once per process, on first use or
// by Warm, into an in-memory compilation cache every backend of the
// process shares (several seconds on a loaded machine;
// Options.CompilationCacheDir keeps it on disk for the next process, which
// cmd/sandbank does). Every run then starts a new Go runtime: tens of
// milliseconds, against a fraction of one for the in-process engine; and
// the interpreter runs about twenty times slower compiled to WebAssembly
// (docs/performance.md). So "starlark" stays the default Starlark engine;
// choose "starlark-wasm" when the script is untrusted enough that a
// memory bomb or one long built-in operation must not reach the host.
// Instances are not parked and restored (QuickJS's parked mode), so every
// run pays the start-up.
//
// # Security considerations
//
//   - The guest has no filesystem, no environment, no arguments beyond
//     three numbers, a fake wall clock and monotonic clock
//     (internal/wasmhost.Isolate) and seeded randomness. Starlark offers a
//     script no clock, no randomness and no I/O anyway; print goes
//     nowhere.
//   - The script cannot reach the guest's stdout or stderr: the records
//     are written by the guest program, and carry a nonce the script never
//     sees. The host keeps a bounded prefix of each stream.
//   - The Go runtime's fatal errors are read from stderr ("fatal error: out
//     of memory", "fatal error: stack overflow"); a value nested deeply
//     enough to overflow the goroutine stack in the in-process engine ends
//     the guest instead of the host, and is reported as a thrown error (or
//     the memory limit, which a deep stack usually reaches first).
//   - The host holds a run's linear memory as a Go slice that grows by
//     doubling, so while it grows the host briefly holds up to about twice
//     the memory limit per run (measured by TestMeasuredBombsEndTyped).
//   - A script whose compile alone does not fit in the memory limit is
//     reported as inputTooLarge, not as the memory limit: the host cannot
//     tell the script's compile from the input's conversion, both of which
//     come before the start record.
package starlarkwasm
