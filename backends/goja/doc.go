// Package goja is a second JavaScript backend of Sandbank: the pure-Go
// interpreter github.com/dop251/goja, in process. It starts fast and needs
// no compilation step, for small, trusted-ish scripts; it cannot bound
// memory, and its wall clock is soft (see Security considerations). Flows
// that need hard limits select the QuickJS backend instead. Application
// code does not call it directly: hand the backend returned by [New] to
// package effect, or select it by its engine name "goja" in the registry.
//
// # The script contract
//
// The same as the QuickJS backend's, proven by the same fixtures
// (fixtures/javascript). The script is JavaScript source run as a classic,
// non-strict script at global scope in a new goja.Runtime per run. It sees
// a global input holding the caller's JSON input; its result is its
// completion value, serialised by JSON.stringify as it was before the
// script ran. A completion value JSON cannot represent is a thrown
// "TypeError"; a thrown value is a thrown outcome with its name and
// message; a syntax error, and a script refused before it is parsed (over
// [Options].MaxScriptBytes, not valid UTF-8, nesting brackets deeper than
// [Options].MaxScriptNesting), is a thrown "SyntaxError"; a call stack
// deeper than [Options].MaxCallStackSize is a "RangeError" the script
// cannot catch. Source built at run time (eval, the function
// constructors, RegExp) is measured the same way and is a catchable
// RangeError over the limits; eval is always an indirect eval.
//
// The globals are ECMAScript's built-ins, plus input, print and console.*,
// which write to the run's log. There is no require, no module loader, no
// timers and no performance object. A thenable completion value is
// awaited (docs/async.md), and a script whose top level uses await runs as
// an async function:
//
//	const r = await Promise.resolve(41)
//	r + 1 // the result is 42
//
// Date starts at [FakeEpoch] (2000-01-01T00:00:00Z) on every run and
// advances one millisecond per reading; Math.random is seeded with
// [RandomSeed] on every run. The wall clock is armed when the script
// starts; at its end, or when the context is done, the runtime is
// interrupted and Evaluate returns at once. Limits.MemoryBytes is not
// enforced.
//
// # Host calls
//
// In a run with host functions (SPI 1.1) the script has a global host:
// every member takes one JSON-representable value and returns a promise
// of the host's answer; several calls may be in flight, run concurrently
// by the effect (at most its MaxConcurrentHostCalls at once, started in
// the script's order) and settled as their answers arrive, and a failed
// call rejects with an Error carrying the effect's text:
//
//	const [orders, names] = await Promise.all([host.orders({since: "2026-01-01"}), host.customers()]);
//
// # Files
//
// Every run has a global files (frozen, behind a non-writable binding):
// files.read(name) is an input file as a string (UTF-8, each invalid byte
// U+FFFD), files.read(name, "bytes") a Uint8Array, files.write(name, data)
// writes a string (as UTF-8) or a Uint8Array as an output file (a second
// write of a name replaces it), files.list() the input files' names,
// sorted. A bad name or a missing file throws an Error the script may
// catch; a write past Limits.MaxOutFiles or MaxOutFileBytes ends the run
// with LimitFiles.
//
// # Security considerations
//
// The backend declares Network none, WallClock soft, Memory false, CPU
// false and FreshPerRun true.
//
//   - WallClock soft: a native built-in (a huge repeat or sort, a
//     backtracking regular expression, compiling a long operator chain)
//     runs to completion first; Evaluate returns at the deadline while the
//     run's goroutine finishes in the background, holding its CPU. Such
//     a leftover counts against the backend until it ends: while
//     [Options].MaxLeftovers (default GOMAXPROCS) of them go on, a new run
//     is refused at once (an infrastructure outcome, [MsgLeftovers],
//     retryable) rather than stacked beside them.
//   - Memory false: an allocation bomb grows the host process until the Go
//     runtime fails, and that ends the whole process. Run goja only on
//     scripts you would let use the host's memory.
//   - The Go stack: goja recurses on the Go stack, and an overflow is as
//     fatal as running out of memory; the size and nesting limits below
//     are crash bounds, not policy.
//   - Source maps are off, so a script cannot make the host open a file.
//   - Local time is the host's time.Local: run the host with TZ=UTC to
//     hide its zone.
//
// Why each bound is where it is, with the measurements behind it: see
// docs/RATIONALE.md R23.
//
// # Limits
//
// The defaults, each an [Options] field with a ceiling New enforces:
// MaxCallStackSize 2,000 (ceiling 10,000), MaxNesting 10,000 (100,000),
// MaxScriptBytes 256 KiB (256 KiB), MaxScriptNesting 1,000 (10,000).
package goja
