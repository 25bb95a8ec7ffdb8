// Package wasmtime is the second runtime of Sandbank's QuickJS engine: the
// same QuickJS-NG v0.11.0 WASI build, JavaScript contract and guest
// protocol as package quickjs, run by wasmtime through its Go binding
// (github.com/bytecodealliance/wasmtime-go/v39) instead of wazero. It
// registers as the engine "quickjs-wasmtime"; "quickjs" stays the default
// of "javascript". Application code hands the backend returned by New to
// package effect, or selects it in the registry, for example by requiring
// a CPU budget.
//
// The backend needs cgo: without it this package holds only this
// documentation, and the engine is not registered. Pick it for
// compute-heavy flows and wherever a deterministic CPU budget is wanted;
// pick package quickjs for a pure-Go build (see docs/RATIONALE.md R11).
//
// # Runs
//
// The engines and the compiled module are process-wide: one engine counts
// fuel, for backends with a CPU budget (Options.Fuel), the other does not,
// so a run without a budget pays nothing for the count; the module is
// compiled for each once per process, when first needed, or loaded from Options.CacheDir (by default
// os.UserCacheDir()/sandbank, sealed with its SHA-256). Every Evaluate
// creates a new store and instance and closes them when it returns, so no
// state survives from one run to the next. The script contract is package
// quickjs's.
//
// # Limits
//
//   - Wall clock (hard): armed when the script starts; start-up has its
//     own bound, Options.ColdStartAllowance (by default 30 s plus 4 s per
//     MiB of input). A record the guest writes after the clock ran out is
//     never read. The run is stopped at its clock, its context's end or
//     Close, even inside one long native builtin.
//   - CPU: wasmtime fuel, Options.Fuel units per run, counted from the
//     script's start; running out is the typed limit cpu. Fuel is
//     deterministic. Without Options.Fuel there is no CPU budget, no fuel
//     is counted and the backend declares CPU false: the wall clock bounds
//     the run.
//   - Memory: linear memory is capped at Limits.MemoryBytes.
//   - The C stack: 1 MiB of the guest's own (it counts against the memory
//     limit); 3,112 plain recursive frames fit. A recursion too deep is the
//     thrown RangeError "Maximum call stack size exceeded"; an input
//     nested too deep is inputTooLarge.
//
// # Security considerations
//
// Each run gets no preopened directory, no environment, package quickjs's
// fake clock, no random source but the one QuickJS seeds from that clock,
// no poll_oneoff, and in-memory, bounded standard streams. Deserializing a
// compiled module runs its code: the cache directory must be this
// process's own (entries are read back only when their checksum matches).
// How each of these is done, and why: see docs/RATIONALE.md R11 and R20.
package wasmtime
