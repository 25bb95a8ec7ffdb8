// Package extism is a Sandbank backend that runs arbitrary WebAssembly
// plugins (language "wasm") with the Extism Go SDK on wazero. It is for
// teams that compile their tools to wasm (Rust, Go, AssemblyScript, C…)
// and want model-selected plugins run under Sandbank's guarantees.
//
// Applications do not call it directly: they hand the backend from [New] to
// package effect, which owns every bound and mapping around it.
//
// # The script contract
//
// The script bytes are a wasm module that is an Extism plugin: it exports a
// function named "run" (Options.FunctionName) that takes no parameters and
// returns an i32 (or nothing), reads the Extism input (the caller's input as
// JSON text) and sets the Extism output (its result as JSON text), using the
// Extism kernel host functions of module "extism:host/env". Each run
// reports:
//
//   - output that is JSON text, with return code 0 and no error: OK.
//   - an error set with error_set: Threw with that message (whatever the
//     return code).
//   - a non-zero return code without an error: Threw with a fixed message
//     holding the code.
//   - a trap (unreachable, an out-of-bounds access, a stack overflow, a host
//     function refusing a call such as an HTTP request to a host that is not
//     allowed): Threw with name "trap".
//   - bytes that are not a valid module, a module that imports from anything
//     but "extism:host/env", "sandbank:host" (host calls, below) and
//     "wasi_snapshot_preview1" when WASI is enabled, an import the host does not provide, or no suitable "run"
//     export: Threw with name "CompileError".
//   - output that is not JSON text: Threw with name "OutputError". Text
//     nested deeper than encoding/json's 10,000 levels is JSON text all
//     the same: it is OK here, and the effect refuses it with a typed
//     output limit naming the depth, as it does for every engine.
//   - the wall clock running out: Limit wallClock.
//   - a failure (any of the above but OK) after the memory budget refused a
//     grow or while a memory is at its cap, or a module whose declared
//     memory alone exceeds the budget: Limit memory.
//   - an input that does not fit in the budget: InputTooLarge.
//
// # Host calls
//
// A plugin asks its host for data (SPI 1.1; the effect's host functions)
// through two imports of module "sandbank:host":
//
//	(import "sandbank:host" "call"  (func (param i64 i64) (result i64)))
//	(import "sandbank:host" "error" (func (result i64)))
//
// call takes the offsets of two Extism kernel blocks (alloc, then
// store_u8/store_u64): the host function's name and its argument as JSON
// text. It blocks until the host answers and returns the offset of a new
// block holding the answer as JSON text (length gives its size), or 0 when
// the call failed; error then returns the offset of a block holding the
// failure's message (0 before any failure). To leave a failure uncaught, a
// plugin sets that block as its error (error_set) and returns 1: a thrown
// outcome with the host's message. Calls are made one at a time, in the
// plugin's order (the import is synchronous: a plugin has one call in
// flight, so the kit's host_concurrent case is declared inapplicable); in a run without host functions every call fails. The
// fixtures/wasm host_*.wat modules are small, complete examples.
//
// # Limits
//
//   - Wall clock (hard): every plugin is rewritten with a stop check before
//     it is compiled, so a run is stopped at its deadline or its context's
//     end inside any loop or bulk memory operation. A module the rewriter
//     does not understand (SIMD, threads, exception handling, tail calls,
//     multiple memories) is refused as a CompileError. Compiling is not
//     charged to the script; instantiating (the module's start function)
//     is. A call that ended after its wall clock never delivers its value.
//   - Memory: Limits.MemoryBytes is one budget over all the wasm memory of
//     a run, the plugin's and the Extism kernel's (which holds the input,
//     the output and the error text, and needs 1 MiB of its own). A run
//     that fails after a refused grow is the memory limit. An input that
//     does not fit in the budget twice over is InputTooLarge.
//   - CPU: none (Capabilities.CPU is false); the wall clock bounds a run.
//   - Fresh per run: each distinct module is compiled once (a bounded
//     cache keyed by its SHA-256 and the memory cap) and every run gets a
//     new instance, closed afterwards.
//
// How each limit is enforced, and where it leaks: see docs/RATIONALE.md
// R24.
//
// # Files
//
// The backend does not take files (Capabilities.Files is false; the
// effect refuses a call with input files). Files would be WASI preopened
// directories, and go-sdk v1.7.1 mounts only the host's own directories
// (Manifest.AllowedPaths: wazero's WithDirMount), where a plugin's writes
// reach the host's disk as they happen: the host could count output files
// only after the run, not stop a write past Limits.MaxOutFiles or
// MaxOutFileBytes as it is made, and a plugin could fill the disk first.
// A read-only input directory alone (a wazero fs.FS mount through the
// instance's ModuleConfig) would be natural, but half of the contract is
// not a declaration the kit accepts. See docs/RATIONALE.md R93.
//
// # Security considerations
//
//   - No WASI by default: a plugin that imports it does not instantiate.
//     With Options.EnableWASI it gets no preopened directories, no
//     environment and no arguments, wazero's fake clocks and deterministic
//     random source, and stdout and stderr written line by line to the
//     run's log (info on stdout, error on stderr), which the effect bounds
//     and keeps in the run's record. Do not set the
//     EXTISM_ENABLE_WASI_OUTPUT environment variable in the host process:
//     the SDK then sends plugin output to the host's own stdout and stderr.
//   - No network by default: the SDK's HTTP host function refuses (traps)
//     every request when no host is allowed. With Options.AllowedHosts the
//     backend declares Network allowlist; the effect refuses it unless the
//     operator passes AllowNetwork. A refused request aborts the plugin (a
//     trap it cannot catch), so a network probe under "no network" ends in
//     a thrown trap naming the URL, not in a report. The SDK matches the
//     host NAME only: every
//     port and scheme of an allowed host is reachable; requests use Go's
//     http.DefaultClient, which follows redirects to any host and honours
//     the host's proxy environment variables, so an allowed host that
//     redirects can lead a plugin elsewhere. Allow only hosts you trust.
//   - Memory outside the wasm budget: the Extism var store (at most
//     MaxVarBytes per run), HTTP response bodies while they are copied in
//     (at most the memory cap), the copy of the output, and wazero's own
//     bookkeeping and machine stack.
//   - Plugin log messages (log_info, log_warn, log_error) reach the run's
//     log, one line each, bounded by the effect; log_debug and log_trace
//     reach no one (the SDK's level is process-wide: see logs.go).
package extism
