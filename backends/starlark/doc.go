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
// script's order: Starlark has no asynchrony, so a script has one call in
// flight (the kit's host_concurrent case is declared inapplicable). A run without host functions has neither name, so a
// script using them does not compile there.
//
// # Files
//
// Every run has a predeclared module files (files.go): files.read(name)
// is an input file as a str (each invalid UTF-8 byte U+FFFD),
// files.read(name, bytes=True) as bytes, files.write(name, data) writes a
// str or bytes as an output file (a second write of a name replaces it),
// files.list() the input files' names, sorted. A bad name or a missing
// file is an error of the script; a write past Limits.MaxOutFiles or
// MaxOutFileBytes ends the run with LimitFiles.
//
// # Security considerations
//
// The backend declares Network none, WallClock soft, Memory false, CPU true
// and FreshPerRun true, and no more, because that is what the conformance
// kit proves:
//
//   - WallClock soft: a single built-in call is one step and runs to
//     completion after the deadline, in the background; Evaluate returns
//     at the deadline all the same, and a value that arrives after the
//     clock is never delivered.
//   - Memory false: Limits.MemoryBytes is not enforced, and one built-in
//     call that allocates a huge value at once (len([0] * 100000000))
//     holds up every goroutine of the process for seconds. Run this
//     backend only on trusted scripts or behind a memory bound of its own,
//     or use backends/starlarkwasm (engine "starlark-wasm"): this engine
//     compiled to WebAssembly, with a hard memory cap and a hard clock.
//   - CPU true: the step budget ([Options].MaxSteps) bounds interpreted
//     work, not work inside one built-in call. Its default also keeps
//     scripts below the nesting depth at which printing a value overflows
//     the Go stack, which ends the process: a larger MaxSteps is for
//     trusted scripts only.
//   - Parsing is bounded (nesting, and at most 262,144 brackets and
//     operators), since a Go stack overflow in the host is fatal.
//
// A panic inside the interpreter is recovered and reported as an
// infrastructure failure. The measurements behind each bullet: see
// docs/RATIONALE.md R25.
package starlark
