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
// The same as the QuickJS backend's, proven by the same fixture set
// (fixtures/javascript, unchanged). The script is JavaScript source run as
// a classic, non-strict script at global scope in a NEW goja.Runtime per
// run. It sees a global input holding the caller's JSON input, converted
// in Go (without recursion) to the value JSON.parse would build: an empty
// input is null, and a number beyond a float64, such as 1e400, is
// ±Infinity, as on QuickJS (the script's own JSON.parse is goja's, which
// refuses such a number with a SyntaxError). Its result is its completion
// value (the value of the last expression statement), serialised by the
// runtime's JSON.stringify as it was before the script ran (toJSON
// methods run; non-finite numbers become null; lone surrogates are
// escaped), and handed over as that text however deep it nests: a result
// too deep or too large is the effect's to refuse. A completion value JSON cannot represent (undefined, a
// function, a symbol, a BigInt, a cycle, an object whose toJSON returns
// nothing, or a toJSON that throws) is a thrown "TypeError" whose message
// starts "the completion value cannot be represented as JSON: ".
//
// A thrown value becomes a thrown outcome: for an object, its name and
// message properties when they are strings (else an empty name and the
// value's String form); for anything else, an empty name and String(value).
// They are read by a function built before the script ran, so replacing
// String or a prototype changes nothing, and a throwing getter, a
// revoked proxy or a throwing toString reads as empty. Nothing else of
// the thrown value is touched (goja's own error path would test it with
// instanceof, running a proxy's traps). A syntax error is thrown with the
// name "SyntaxError", and so is a script refused before it is parsed:
// over [Options].MaxScriptBytes, not valid UTF-8, or nesting brackets
// deeper than [Options].MaxScriptNesting. A call stack deeper than
// [Options].MaxCallStackSize is a thrown "RangeError" ("Maximum call
// stack size exceeded"); in goja the script cannot catch it.
//
// Source the script builds and has parsed at run time is measured the
// same way first: the argument of eval, of the Function, AsyncFunction
// and GeneratorFunction constructors (by name or reached through any
// prototype; goja has no async generators), of RegExp, RegExp.prototype.compile and String.prototype
// match, matchAll and search (which build a RegExp from a string). Over
// MaxScriptBytes UTF-16 units, or nesting brackets deeper than
// MaxScriptNesting, it is a RangeError the script can catch. Two
// differences from the built-ins follow: eval is always an indirect eval
// (eval(s) runs s at global scope, as (0, eval)(s) does, and does not see
// the calling function's variables), and RegExp(r) called on a RegExp
// returns a copy, as new RegExp(r) does, not r itself.
//
// The globals are ECMAScript's built-ins as goja implements them, plus
// input, print and console.log, info, warn, error, debug and trace, which
// accept anything and write one line each to the run's log (their
// arguments' strings joined by spaces, cut at spi.MaxLogLineBytes; warn, error
// and trace on stderr), which the effect bounds and keeps in the run's record,
// as the QuickJS engines' console does. There is no
// require, no module loader (a dynamic import() is a SyntaxError), no
// timers (setTimeout and friends do not exist), no performance object.
//
// A thenable completion value is awaited (docs/async.md): the backend
// adopts it with the Promise.resolve it captured before the script ran and
// lets goja run its job queue, under the same wall clock and context, until
// the queue is empty. Fulfilled: the value is the result. Rejected: a
// thrown outcome, read as a thrown value is. Still pending: a thrown
// "Error", "the script's promise never settled". A script whose top level
// uses await runs as an async function through the shared front end
// (internal/jsfront), and its last expression is its result:
//
//	const r = await Promise.resolve(41)
//	r + 1 // the result is 42
//
// A completion value that is not thenable is serialised inside the
// script's call and the job queue is then dropped with an interrupt, so a
// then-callback cannot change a synchronous result. An unhandled
// rejection does not change the result. goja has no for-await loop (a
// SyntaxError), and there are no timers.
//
// Date: the clock starts at [FakeEpoch] (2000-01-01T00:00:00Z) on every run
// and advances one millisecond per reading (Date.now(), new Date()), as the
// QuickJS backend's does; it reveals nothing about the host's clock or
// about earlier runs. Math.random: a PCG generator (math/rand/v2) seeded
// with [RandomSeed] on every run, so every run sees the same sequence and
// never the host's random state.
//
// The wall clock (Limits.WallClock) is armed when the script starts, after
// the runtime was built and the input parsed; a zero WallClock arms none.
// When it expires the runtime is interrupted (goja.Runtime.Interrupt) and
// Evaluate reports the wall-clock limit at once. When the context is
// cancelled the runtime is interrupted the same way and Evaluate returns
// the context's error at once. Limits.MemoryBytes is not enforced.
//
// # Host calls
//
// In a run with host functions (SPI 1.1; package effect's Options.Host and
// Call.Host) the script has a global host: every member is a function
// taking one JSON-representable value (none is null) and returning a
// promise of the host's answer, decoded as the input is (host.go):
//
//	const [orders, names] = await Promise.all([host.orders({since: "2026-01-01"}), host.customers()]);
//
// A call blocks the script until the host answers, so calls run one at a
// time in the script's order, and the promise is settled when the function
// returns. A failed call rejects with an Error whose message is the
// effect's text (an unknown name, an oversized argument or answer, the
// host's own error); more than one argument, or one JSON cannot
// represent, rejects with a TypeError. host.then is undefined, so `await
// host` is host itself. A run without host functions has no host global.
//
// # Security considerations
//
// The backend declares Network none, WallClock soft, Memory false, CPU
// false and FreshPerRun true: what the conformance kit proves, and no more.
//
//   - Network none: goja has no I/O of its own and the backend adds none;
//     the kit's network and escape probes find nothing.
//   - FreshPerRun: every run gets a new runtime, so no global, prototype or
//     symbol-registry change survives it. Runs share no goja state, and
//     any number run side by side.
//   - WallClock SOFT: goja checks for an interrupt between instructions
//     only. A native built-in runs to completion first: "x".repeat(3e8),
//     sorting or joining a huge array, a regular expression with
//     catastrophic backtracking (patterns with lookaround or
//     backreferences run on goja's backtracking regexp2 engine, with no
//     time-out: /^(a+)+(?=c)/ on 25 "a"s took 2.6 s in one call), parsing
//     a large script or a large source at run time, JSON.stringify of a
//     deeply nested value (quadratic in the depth). Compiling a long
//     operator chain is quadratic in goja (its constant folding walks the
//     whole chain at every level): "1+".repeat(40000) took 63 s to
//     compile on a loaded machine, so a chain within the size limit
//     (131,071 terms) holds a core for many minutes after its clock.
//     Evaluate still returns at the deadline, but the run's goroutine
//     finishes that built-in in the background, holding its CPU and memory
//     meanwhile: a caller that retries stopped runs can pile them up. The
//     result's own serialisation is interruptible (a replacer checks for
//     the stop between values).
//   - Memory FALSE: goja cannot bound allocation. An allocation bomb grows
//     the host process until the Go runtime fails, and a Go out-of-memory
//     failure is fatal: it ends the WHOLE process, every other run and the
//     application with it. Run goja only on scripts you would let use the
//     host's memory, or in a process you can afford to lose; flows that
//     need a memory bound select QuickJS.
//   - CPU false: there is no step or CPU budget; the wall clock is the only
//     bound on time.
//   - The Go stack: goja recurses on the Go stack to parse source, JSON
//     and regular expressions and to flatten arrays, and a Go stack
//     overflow is as fatal as running out of memory. The backend measures
//     first and refuses: a script over 256 KiB or nesting brackets over
//     1,000 deep is a thrown SyntaxError; a source parsed at run time
//     (eval, the function constructors, RegExp: see above) over the same
//     limits is a RangeError; an input nested over 10,000 deep is
//     InputTooLarge (as QuickJS reports an input too deep for its stack);
//     JSON.parse and Array.prototype.flat called by the script throw a
//     RangeError past 10,000 levels; JavaScript calls are bounded by
//     MaxCallStackSize. Measured without the guards: JSON.parse of
//     4,000,000 nested arrays, flat(Infinity) over 2,000,000, 262,144
//     unclosed parentheses, eval of a million parentheses, and RegExp of a
//     million nested "(?:(?=a)" groups each crashed the process; the tests
//     run each past its guard, in the test binary. The size limit is what
//     bounds the nesting the bracket count cannot see (brackets hidden
//     behind decoys in strings, statement and operator chains such as
//     "if (1) if (1) …" or "!!!…" that use no brackets): 256 KiB holds
//     at most about 131,000 hidden levels, half the crashing depth. Run
//     at the limit, chains of "!", "~", "a=", "1?1:", "if(1)", "new ",
//     "typeof ", "f()", ".a" and "a," ended without a crash; "1+", "x=>",
//     "1**" and "+-" ran past a 60 s clock (see WallClock) with a small
//     stack (49 MB resident after 3 CPU minutes). That is why
//     MaxScriptBytes has a ceiling of 256 KiB: it is a crash bound, not a
//     policy, and [Backend.MaxScriptBytes] reports it. Other built-ins
//     that walk script-built nesting (JSON.stringify, join and toString of
//     nested arrays) are quadratic in the depth, so they burn CPU (see
//     WallClock) long before they could reach a crashing depth.
//   - Source maps: goja's parser reads the file named by a
//     "//# sourceMappingURL=" comment (a file: URL, or a path relative to
//     the process's directory) from the host's file system: a FIFO hangs
//     the run for good, /dev/zero exhausts memory. The backend turns
//     source maps off for the script and every source parsed at run time,
//     so a script cannot make the host open a file.
//   - Recursion through built-ins (a callback of map, a getter, toJSON,
//     a proxy trap) is quadratic to unwind in goja: at the default depth of
//     2,000 it costs about 0.1 s, at 10,000 (the ceiling) several seconds.
//   - The time zone: goja computes local time (getTimezoneOffset, toString,
//     getHours, …) in the host process's time.Local, so a script can read
//     the host's zone, though not its clock. Run the host with TZ=UTC to
//     hide it.
//
// # Limits
//
// The defaults, each an [Options] field with a ceiling New enforces:
// MaxCallStackSize 2,000 (ceiling 10,000), MaxNesting 10,000 (100,000),
// MaxScriptBytes 256 KiB (256 KiB), MaxScriptNesting 1,000 (10,000).
package goja
