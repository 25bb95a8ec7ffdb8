// Package jsfront is the JavaScript front end every JavaScript engine of
// Sandbank shares (goja, and QuickJS on wazero, fresh or parked, and on
// wasmtime): it turns a script's source into what the engine evaluates.
// Its one job today is top-level await. [Prepare] returns a script that
// does not use await at its top level UNCHANGED, byte for byte (the very
// slice it was given), so every classic script runs exactly as before; a
// script whose top level uses await (an await expression, or a for-await
// loop) is wrapped in an async arrow function whose completion value is
// the script's, and the engine awaits the promise the wrapped script
// evaluates to (engines await every thenable completion value; see
// docs/async.md).
//
//	const r = await Promise.resolve(41)
//	r + 1
//
// becomes
//
//	(async () => {const r = await Promise.resolve(41)
//	__sandbank_completion__ = r + 1
//	;return __sandbank_completion__; var __sandbank_completion__})()
//
// # Line numbers
//
// Nothing is inserted before the user's first byte but [Prefix], on the
// same line, and nothing adds a line: every error keeps the user's line
// number. Columns move on the first line (by len(Prefix)) and on a line
// holding a completion assignment.
//
// # The completion value
//
// A classic script's completion value is the value of the last expression
// statement that ran. The wrapped script returns it for the statements
// whose value is easy to follow: the last top-level statement that is not
// a declaration (var, let, const, function, class) or an empty statement
// decides; an expression statement gives its value; a block, each branch
// of an if, and the try and catch blocks of a try statement give their own
// value by the same rule (an if whose test is false and that has no else
// gives undefined, as in a classic script). Any other last statement (a
// loop, a switch, a labelled statement, a throw) gives undefined, which
// the engines report as they report an undefined completion value today:
// a "TypeError" saying it cannot be represented as JSON. A classic script
// would give the value of the last expression a loop ran; end the script
// with an expression to return it.
//
// # What changes in a wrapped script
//
//   - Top-level var and function declarations are local to the async
//     function: they no longer become properties of globalThis. let, const
//     and class were never properties of the global object; they are now
//     local too, which no single run can tell apart.
//   - this at the top level is still globalThis (an arrow function takes
//     its this from the script around it), arguments is still not
//     defined, and a leading "use strict" still makes the code strict.
//   - A name __sandbank_completion__ is declared (var) in the function; a
//     script that itself contains that name is wrapped without the
//     completion assignment, and its result is undefined.
//   - A top-level return is not made legal: such a script is left as it
//     is, and the engine refuses it as a classic script.
//
// # Which scripts are read as using top-level await
//
// goja's parser (github.com/dop251/goja/parser, already a dependency) reads
// the script as the body of an async arrow function, with the await of
// every "for await" blanked first (goja's parser has no for-await; the
// blanking keeps every offset, and the blanked copy is only parsed, never
// run). The script uses top-level await when that reading succeeds and
// finds an await expression or a for-await loop outside every nested
// function, class static block and field initializer. esbuild (also a
// dependency) parses more syntax, but its public API returns printed code,
// not a syntax tree with offsets: the completion value could not be
// placed on the user's own lines with it.
//
// So a script that uses await as a name (var await = 1) stays a classic
// script, and so does one where await is only inside async functions. A
// script that calls a global function named await, declared outside the
// script (await(x) with no await binding in the script), is read as
// awaiting x.
//
// A script with a syntax error: when the classic reading parses, nothing
// changes. When neither reading parses and the async reading got further
// than the classic one (the script uses top-level await and its real
// error is later), the script is wrapped, without the completion
// assignment, so the engine reports the real error on the user's line;
// otherwise it is left as it is and the engine reports its first error.
// The same rule meets the syntax goja's parser lacks and QuickJS has
// (import(), an async generator method, await using): in a script with
// top-level await, such syntax at or before the first await leaves the
// script as it is (QuickJS then refuses the await as a classic script
// does); after it, the script is wrapped without the completion
// assignment and its result is undefined. Inside an async function the
// syntax is never read by the front end: `(async () => { const os = await
// import("m"); ... })()` is a classic script whose promise the engine
// awaits.
//
// # Security considerations
//
// The front end runs in the host process on untrusted source, before any
// engine limit applies. It parses nothing over [MaxBytes] or nesting
// brackets deeper than [MaxNesting] (goja's parser recurses on the Go
// stack, and a Go stack overflow ends the process; the goja backend
// refuses the same scripts for the same reason); such a script is
// returned unchanged and runs as a classic script. Its own walk of the
// syntax tree is iterative. Source maps are off: a sourceMappingURL
// comment never makes the host open a file. The added text declares one
// function-local name and nothing global; the script can read and
// overwrite that name, which only changes its own result.
package jsfront
