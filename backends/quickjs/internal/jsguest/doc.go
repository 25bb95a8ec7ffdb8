// Package jsguest is the QuickJS side of the guest protocol of the
// QuickJS backends: what runs inside the QuickJS-NG WASI command module
// and how the host reads what it reports. The engine-neutral half (the
// nonce, the framed records, the bounded stdout sink, host calls) is
// internal/wasm/guest. It knows nothing about the WebAssembly runtime
// that hosts the module (wazero, with a fresh or a parked instance per
// run, or wasmtime), so every runtime speaks the same protocol:
//
//   - [Wrapper] is the JavaScript the engine evaluates with -e. It reads a
//     [Payload] from stdin (a per-run nonce, the script, the caller's
//     input), removes the argument globals, reads the script and then
//     parses the input in phases of their own (an out-of-memory in either
//     is a record of its own, so the host can say which did not fit),
//     redirects print and console to stderr (as log records of
//     internal/wasm/guest's one log framing), signals "script starts" with a framed record, runs
//     the script as a classic global script (std.evalScript) and writes
//     one framed record with the result.
//   - [StackPass] is the stack pass both engines apply (a C stack of the
//     guest's own with a bound check), [GuardedLayout] the region it
//     gives the stack, and [Canary] the second line of defence at its
//     bottom; [ParseLayout] is the stack of the binary as it ships, which
//     has no stack check, so a deep recursion there overwrites the static
//     data below it.
//   - [Interpret] turns what a run left behind ([Facts]) into an
//     spi.Outcome. Every reading of the engine's own messages ("out of
//     memory", traps, exits without a result) lives there.
//
// Application code never uses this package; it is internal to
// backends/quickjs.
//
// # Security considerations
//
// The nonce travels only on stdin and lives only in module-scoped
// bindings of the wrapper, which the script (evaluated at global scope)
// cannot name. Every function the wrapper calls after the script ran is
// captured before it ran, so the script cannot redefine them. The script
// has no synchronous way to reach stdout: print and console go to stderr.
// The qjs:std / qjs:os modules are reachable through a dynamic import()
// that the script awaits (the job queue runs for a thenable completion
// value); writing to stdout through them cannot forge a record, which
// needs the nonce. (A parked instance is restored whole, pending jobs and
// timers included, before the next run.)
package jsguest
