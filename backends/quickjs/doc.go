// Package quickjs is the JavaScript reference backend of Sandbank: the
// official QuickJS-NG v0.11.0 WASI build (github.com/paralin/go-quickjs-wasi)
// run by wazero. Application code does not call it directly: hand the
// backend returned by [New] to package effect, which owns every guarantee
// around it, or select it by its engine name "quickjs" in the registry.
//
// One backend holds one wazero runtime and one compiled module (compiled
// by Warm or by the first Evaluate, optionally cached on disk with
// Options.CompilationCacheDir). Every Evaluate instantiates the module
// afresh, so no state survives from one run to the next, and any number of
// Evaluate calls run side by side, one instance each.
//
// # The script contract
//
// The script is JavaScript source evaluated as a classic script at global
// scope (an indirect eval). It sees a global input holding the caller's
// JSON input, parsed inside the engine. Its result is its completion
// value (the value of the last expression statement), returned as JSON
// text (JSON.stringify, so toJSON methods run and non-finite numbers
// become null). A thrown value becomes a thrown outcome with the error's
// name and message; a syntax error is thrown with the name "SyntaxError";
// a completion value JSON cannot represent (undefined, a function, a
// symbol, a BigInt, a cycle) is thrown as a "TypeError" saying so. print
// and console.* write to a bounded stderr that is not part of the result.
// Promise jobs and timers never run: the engine ends as soon as the
// completion value is written, so an async function's result is a pending
// promise (which JSON writes as {}).
//
// # Security considerations
//
// The engine has no host capability by construction, and each run gets
// none: no preopened directory, no environment variables, a fake clock
// that starts at 2000-01-01T00:00:00Z and advances one millisecond per
// reading (Date.now() and performance.now() reveal nothing about the host
// or about earlier runs), a deterministic random source, and arguments the
// backend controls (the wrapper deletes execArgv, scriptArgs and argv0
// before the script runs). The engine's modules qjs:std and qjs:os can be
// named in a dynamic import(), but the promise never settles before the
// engine ends; and with no preopens they would reach nothing on the host.
//
// The result travels on stdout in a record framed with a per-run random
// nonce and the result's length, followed by an end marker; the script
// never learns the nonce, so nothing it prints can be taken for its
// result. stdout and stderr are bounded buffers.
//
// Memory: linear memory is capped per run at Limits.MemoryBytes through a
// memory allocator that refuses growth past it (wazero's page limit is per
// runtime, and there is one runtime per backend), and QuickJS's own
// --memory-limit is set to the same figure (it only catches single
// oversized allocations on this build, such as "x".repeat(3e8)).
//
// Wall clock: wazero's close-on-context-done stops the guest at the
// deadline even inside one long native call (Options.CloseOnContextDone,
// on by default; off, the backend declares WallClock soft). The clock is
// armed when the guest reports that the script starts, after the engine
// booted and parsed the input; those phases have their own bound,
// Options.ColdStartAllowance, and exceeding it is a [*StartupError],
// never a limit.
//
// The C stack: this build has no stack check and a 64 KiB C stack that
// sits directly above the static data, so a deep recursion silently
// overwrites static data (measured without a guard: one over-deep run
// returned a well-formed wrong value). The backend derives the stack
// region from the binary (the __stack_pointer global and the DWARF layout
// of the static data, never fixed addresses; New fails if it cannot),
// writes 1 KiB of random canary at its bottom before each run and checks
// it after: a clobbered canary, or a trap, is reported as a thrown
// "InternalError" describing a stack overflow, never as a value, and the
// instance is discarded like every instance.
//
// # Limits
//
//   - Recursion: plain JavaScript recursion of about 200 frames fits in
//     the C stack (measured: 200 returns, 205 overflows; QuickJS's
//     --stack-size has no effect on WASI). JSON.parse of the input and
//     JSON.stringify of the result handle nesting of 3,000 levels; an
//     input nested so deeply that parsing it overflows the stack is
//     reported as InputTooLarge.
//   - CPU: no budget (this build exports no interrupt hook); the backend
//     declares CPU false.
//   - Memory: at most 4 GiB (the 32-bit address space). The engine needs
//     between 256 and 512 KiB to boot; a smaller limit is reported as the
//     memory limit. On Linux, linear memory is one reserved mapping of the
//     limit, committed only as the guest touches it, so growing costs the
//     host no copy (a 1 GiB run is stopped at its clock within a few ms).
//   - Speed: the close-on-context-done check slows CPU-bound scripts
//     (see the benchmarks); string-heavy work is slow in this build.
//   - A script can throw its own InternalError("out of memory"), which is
//     reported as the memory limit: the engine's out-of-memory error cannot
//     be told apart from a copy.
package quickjs
