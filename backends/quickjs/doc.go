// Package quickjs is the JavaScript reference backend of Sandbank: the
// official QuickJS-NG v0.11.0 WASI build (github.com/paralin/go-quickjs-wasi)
// run by wazero. Application code does not call it directly: hand the
// backend returned by [New] to package effect, which owns every guarantee
// around it, or select it by its engine name "quickjs" in the registry.
//
// One backend holds one wazero runtime and one compiled module (compiled
// by Warm or by the first Evaluate). The rewritten module and its compiled
// code are kept across processes, sealed, in Options.CacheDir, by default
// os.UserCacheDir()/sandbank (Options.NoCache turns it off), so a new
// process neither rewrites nor compiles. Any number of Evaluate calls run
// side by side, one instance each.
//
// # Modes
//
// Every run sees exactly the engine a new instance would give it; the two
// modes (Options.Mode) differ in how.
//
//   - ModeParked (the default; engine "quickjs"): a pool of instances per
//     memory limit (Options.PoolSize, GOMAXPROCS by default; at most four
//     limits keep a pool), each booted once and parked inside its first
//     read of the request; a run restores the park point (memory, globals,
//     call stack, clocks, random source) and resumes. A run that ends in
//     anything but a result or a thrown value discards its instance. When
//     the rewriting passes parked mode needs cannot prove the module safe,
//     New runs the backend in ModeFresh and says why ([Backend.Mode],
//     [Backend.ParkedModeError]). The safety argument and its limits: see
//     docs/RATIONALE.md R10 and R17.
//   - ModeFresh (engine "quickjs-fresh"): a new module instance per run.
//
// # The script contract
//
// The script is JavaScript source evaluated as a classic global script (a
// top-level var or function is a property of globalThis; let, const and
// class are global lexical bindings). It sees a global input holding the
// caller's JSON input. Its result is its completion value (the value of
// the last expression statement) as JSON text (JSON.stringify: toJSON
// runs, non-finite numbers become null). A thrown value is a thrown
// outcome with the error's name and message; a syntax error is thrown as
// "SyntaxError" with a message ending in its position, as in "unexpected
// token in expression: ';' (line 3, column 9)"; a completion value JSON
// cannot represent (undefined, a function, a symbol, a BigInt, a cycle) is
// a thrown "TypeError" saying so. print and console.* are the run's log.
//
// A thenable completion value is awaited within the run's limits
// (docs/async.md): fulfilled, it is the result; rejected, the rejection is
// thrown; still pending once the job queue is empty, a thrown "Error",
// "the script's promise never settled". A script whose top level uses
// await runs as an async function, and its last expression is its result:
//
//	const r = await Promise.resolve(41)
//	r + 1 // the result is 42
//
// There are no timer globals. A script too large to be read within the
// memory limit (12 MB under the default 32 MiB) is the memory limit; a
// result nested deeper than JSON.stringify's C stack allows is the thrown
// RangeError.
//
// # Host calls
//
// In a run with host functions (SPI 1.1) the script has a global host:
// every member returns a promise of the host's answer
// (`await host.orders({since: "2026-01-01"})`), a failed call rejects with
// an Error carrying the effect's text. Several calls may be in flight
// (`await Promise.all(ids.map(id => host.user(id)))`): the calls a script
// issues before it next waits are sent to the host together, run
// concurrently by the effect (at most its MaxConcurrentHostCalls at once,
// started in the script's order), and each promise is settled as its
// answer arrives.
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
// # Options and limits
//
//   - Memory: linear memory is capped per run at Limits.MemoryBytes (at
//     most 4 GiB); a run whose growth was refused and that ends in a thrown
//     value is the memory limit. The engine needs its C stack plus 256 to
//     512 KiB to boot.
//   - Wall clock: hard by default (Options.StopCheck: a stop check the
//     module is rewritten with; off, the wall clock is soft). It is armed
//     when the script starts; booting and parsing the input are bounded by
//     Options.ColdStartAllowance instead, and exceeding it is a
//     [*StartupError], never a limit. A value that arrives after the clock
//     is never delivered.
//   - CPU: Options.Fuel, when set, is a deterministic budget (the limit
//     cpu; the backend then declares CPU).
//   - Recursion: Options.StackBytes (1 MiB by default, 3,616 plain
//     JavaScript frames; docs/recursion.md). A recursion too deep is the
//     thrown RangeError "Maximum call stack size exceeded", which the
//     script cannot catch. An input nested too deeply to parse is
//     InputTooLarge.
//
// # Security considerations
//
// Each run gets no host capability: no preopened directory, no
// environment, a fake clock from 2000-01-01T00:00:00Z advancing one
// millisecond per reading, a deterministic random source, and none of
// qjs's host globals beyond print and console (HostObjects). The modules
// qjs:std and qjs:os can be imported dynamically and reach nothing on the
// host. The result travels in a record framed with a per-run nonce the
// script never learns. A script can throw its own InternalError("out of
// memory"), which is reported as the memory limit. Why each of these
// holds, and what parked mode does not isolate (timing): see
// docs/RATIONALE.md R9, R10, R13 and R19; measured figures are in
// docs/performance.md.
package quickjs
