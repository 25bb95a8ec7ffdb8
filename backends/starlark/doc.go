// Package starlark is the Sandbank backend for Starlark, the Python-like
// language of go.starlark.net, for scripts that reshape data. It is for
// applications (through package effect, never directly) and for the
// registry; build one with [New] and hand it to effect.New.
//
// # The script contract
//
// A script is a Starlark module that defines a function main(input). The
// backend decodes the caller's JSON input to Starlark values, runs the
// module on a new thread with fresh globals, calls main with the input, and
// encodes main's return value as JSON:
//
//	def main(input):
//	    return {"total": sum([row["n"] for row in input["rows"]])}
//
// (Starlark has no sum built-in; write the loop.) A module without main, or
// whose main is not callable, is a thrown error with a clear message.
//
// Values cross the boundary as follows.
//
//   - JSON null, true, false become None, True, False, and back.
//   - JSON integers of any size become exact Ints, and Ints of any size are
//     encoded exactly: integers past 2^53 stay exact, unlike JavaScript's.
//   - Other JSON numbers (with a fraction or an exponent) become Floats.
//     Encoding a NaN or an infinite Float is a thrown error.
//   - Strings are UTF-8. Invalid UTF-8 and lone surrogates (which JSON can
//     spell as \ud800) become U+FFFD, both ways.
//   - JSON arrays become lists; lists and tuples are encoded as arrays.
//   - JSON objects become dicts in the order of the text; dicts are encoded
//     in their insertion order and must have string keys only.
//   - Any other result (a function, a set, a module, bytes, …), a dict key
//     that is not a string, a value that contains itself, nesting deeper
//     than 1,000,000 (past what the default step budget can build), or a
//     JSON text over [Options].MaxResultBytes is a thrown error naming what
//     was wrong. A result nested deeper than 10,000 is encoded and handed
//     over all the same: the effect refuses it with a typed output limit
//     naming the depth, the rule for every engine. An input nested deeper
//     than 10,000 never reaches the backend: the effect refuses it first.
//
// The predeclared names are Starlark's universal built-ins plus the json
// and math modules of go.starlark.net (json.decode refuses text nested
// deeper than 10,000); nothing else. There is no load (a
// script with a load statement is a thrown error before it runs), no time,
// no randomness and no file or network access. print writes one line to
// the run's log (info, stdout; cut at spi.MaxLogLineBytes), which the
// effect bounds and keeps in the run's record. The dialect is Starlark's
// default: no while loops, no recursion (a recursive call is a thrown
// error), no top-level if or for, no global reassignment, no set.
//
// Outcomes: fail(msg) is a thrown error named "fail" whose message is msg;
// a syntax or name-resolution error is a thrown "SyntaxError"; any other
// runtime error is a thrown "Error" whose message starts with the script
// position. An exhausted step budget is the CPU limit; the request's wall
// clock (armed when the script starts, after the input is converted) is the
// wall-clock limit; a zero Limits.WallClock arms none. When the context is
// cancelled for another reason, Evaluate returns the context's error at
// once.
//
// # Host calls
//
// In a run with host functions (SPI 1.1; package effect's Options.Host and
// Call.Host) the script sees two more names (host.go):
//
//	rows = host.orders({"since": "2026-01-01"})   # the answer, decoded; integers exact
//	rows, err = host_try("orders", {"since": 1})  # (value, None) or (None, message)
//
// host.NAME(args) takes at most one positional argument (none is None,
// sent as null) and returns the decoded answer; a failed call is an error
// the script cannot catch (Starlark has no try), which ends the run as a
// thrown Error naming the host's text. host_try makes the same call and
// returns the failure's message instead. Calls are synchronous, in the
// script's order. A run without host functions has neither name, so a
// script using them does not compile there.
//
// # Security considerations
//
// The backend declares Network none, WallClock soft, Memory false, CPU true
// and FreshPerRun true, and no more, because that is what the conformance
// kit proves:
//
//   - Network none: Starlark has no I/O; the predeclared json and math
//     modules compute only, and load is refused.
//   - WallClock soft: the interpreter checks for cancellation between
//     steps, and a single built-in call is one step. A script such as
//     "x" * 300000000 runs that one call to completion after the deadline.
//     Evaluate returns at the deadline all the same; the goroutine running
//     the script finishes the call later, in the background, consuming CPU
//     and memory meanwhile. Many such runs at once add up.
//   - Memory false: go.starlark.net cannot bound allocation. A script can
//     allocate up to what its steps and its built-in calls allow (one
//     string repetition may allocate up to 1 GiB); Limits.MemoryBytes is not
//     enforced, and the InputTooLarge outcome is never reported. Run this
//     backend only where the process can afford that, or behind a memory
//     bound of its own (a container, a separate process), or use
//     backends/starlarkwasm (engine "starlark-wasm"): this same engine
//     compiled to WebAssembly, with a hard memory cap and a hard clock,
//     and much slower.
//   - Parsing runs in the host process, whose Go stack overflow is fatal:
//     the parser bounds nesting itself ("excessive nesting"), and a script
//     with more than 262,144 brackets and operators (suffix chains such as
//     a()()…, on which the resolver recurses) is a SyntaxError before it
//     is parsed.
//   - One native allocation stops the whole process. A built-in call that
//     allocates a huge value at once (def main(input): return
//     len([0] * 100000000), one step, 1.6 GB of list) holds up every other
//     goroutine of the process while the Go runtime allocates and clears
//     it: measured at 5.6 s with about 1.5 GiB taken from the system on an
//     idle 2-core machine, and 21 s with 3.9 GB of RSS on a loaded one
//     (issue 14). The wall clock cannot help while the world is stopped;
//     what it guarantees is that the value is never delivered: a run that
//     ended after its wall clock is the wall-clock limit, whichever of the
//     timer and the run Evaluate hears from first.
//   - CPU true: the step budget ([Options].MaxSteps) bounds interpreted
//     work. It does not bound work inside one built-in call (see above),
//     and some built-ins take time quadratic in what a script can build
//     cheaply: printing a list nested 100,000 deep takes seconds,
//     10 times deeper takes minutes, in the background past the deadline.
//   - The process itself: go.starlark.net walks nested values recursively
//     without a depth limit (printing with str, repr, % and format;
//     hashing tuples; json.encode), and a goroutine that overflows its
//     stack is a fatal error no recover can catch: it ends the whole
//     process. Measured on this version, printing a value nested between
//     1.1 and 1.6 million levels deep is fatal, and a script can nest about
//     one level per step. The default step budget (1,000,000) keeps scripts
//     below that depth; a larger MaxSteps is for trusted scripts only.
//     json.decode, which would reach any depth in a few steps, is guarded:
//     JSON text nested deeper than 10,000 is refused with an error.
//   - FreshPerRun true: every run has a new Thread and new globals; the
//     predeclared modules are immutable and shared.
//
// A panic inside the interpreter is recovered and reported as an
// infrastructure failure.
package starlark
