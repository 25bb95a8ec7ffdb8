// Package wasmtime is the second runtime of Sandbank's QuickJS engine: the
// same official QuickJS-NG v0.11.0 WASI build as package quickjs
// (github.com/paralin/go-quickjs-wasi), the same JavaScript contract and
// the same guest protocol (backends/quickjs/internal/guest: the wrapper,
// the result framing, the stack guard and the reading of the engine's
// messages live there once), run by wasmtime through its Go binding
// (github.com/bytecodealliance/wasmtime-go/v39) instead of wazero. It
// registers as the engine "quickjs-wasmtime"; "quickjs" (wazero, pure Go)
// stays the default of "javascript". Application code does not call it
// directly: hand the backend returned by New to package effect, or select
// it in the registry, for example by requiring a CPU budget.
//
// The backend needs cgo: without it this package holds only this
// documentation, and the engine is not registered.
//
// Pick it for compute-heavy flows and wherever a deterministic CPU budget
// is wanted: wasmtime's Cranelift code with epoch interruption runs
// CPU-bound scripts several times faster than wazero with its
// close-on-context-done check (see docs/RATIONALE.md, R11, for figures),
// and fuel counts work exactly. Pick package quickjs for a pure-Go build.
//
// # Runs
//
// The wasmtime engines and the compiled module are process-wide: one
// engine counts fuel, for backends with a CPU budget (Options.Fuel), the
// other does not, so that a run without a budget pays nothing for the
// count; each is made, and the module compiled for it (Cranelift), when a
// backend first needs it, once per process, or loaded from
// Options.CacheDir, where the serialized module is kept under a name
// derived from the binding's version, the engine configuration, the
// platform and the hash of the wasm binary, written atomically with a
// checksum. Every Evaluate creates
// a new store and instance and closes them explicitly when it returns, so
// no state survives from one run to the next and runs proceed side by
// side.
//
// The script contract is package quickjs's: the script sees a global
// input, its completion value is returned as JSON text, thrown values
// become thrown outcomes, print and console write to a bounded stderr.
//
// # Limits
//
//   - Wall clock (hard): the script's clock is armed when the guest
//     reports that the script starts (start-up phases have their own
//     bound, Options.ColdStartAllowance, by default 30 s plus 4 s per MiB
//     of input; waiting for the once-per-process compile is bounded by
//     the caller's context only, so a slow compile never fails a run). A record the guest writes
//     after the clock ran out is never read. When it runs out, or when the
//     caller's context is done, or on Close, the backend sets the run's
//     stop flag and advances the engine's epoch: every running guest
//     checks its own flag in an epoch-deadline callback and only the
//     flagged one stops, within the next loop iteration or call even
//     inside one long native builtin. The deadline itself is a Go timer,
//     so it keeps to real time (no epoch ticker to fall behind), and an
//     idle process pays nothing. Until the stopped run returns, the epoch
//     is advanced again every millisecond, so a guest that saw the epoch
//     before its flag (a weakly ordered CPU) is still reached.
//   - CPU: wasmtime fuel, Options.Fuel units per run, counted from the
//     moment the script starts; running out is the typed limit cpu. Fuel
//     is deterministic: a script spends the same fuel on every run.
//     Without Options.Fuel there is no CPU budget and no fuel is counted:
//     the wall clock bounds the run.
//   - Memory: wasmtime's store limiter caps linear memory at
//     Limits.MemoryBytes, and QuickJS's own --memory-limit is set to the
//     same figure (it catches single oversized allocations such as
//     "x".repeat(3e8)). The limiter refuses growth silently, so when the
//     engine dies without reporting, or when the script ends in a thrown
//     value (QuickJS throws null once it cannot allocate its own "out of
//     memory" error), a memory standing within 1/16 of the limit (or
//     1 MiB) is read as the memory limit.
//   - The C stack: the same stack pass as package quickjs
//     (internal/wasmrewrite): a 1 MiB C stack of the guest's own, after
//     its initial memory (it counts against the memory limit), with a
//     bound check after every move of the stack pointer, and a random
//     canary at its bottom as a second line of defence. wasmtime's own
//     native stack for wasm code (2 MiB; its default, 512 KiB, ran out
//     while parsing an input nested 2,700 deep) runs out before that C
//     stack on a plain recursion: 3,112 frames fit. Whichever runs out,
//     a recursion too deep is the thrown RangeError "Maximum call stack
//     size exceeded" (an input nested too deep, before the script
//     started, is inputTooLarge), never a value or an untyped trap.
//
// # Security considerations
//
// Each run gets no preopened directory and no environment. The guest's
// WASI clock is replaced (linker shadowing of clock_time_get and
// clock_res_get) by the fake clock of package quickjs: 2000-01-01T00:00:00Z
// advancing one millisecond per reading; the module imports no random
// source (QuickJS-NG seeds Math.random from that clock). poll_oneoff is
// refused, so the guest cannot hold a host thread asleep. stdin, stdout
// and stderr are shadowed too (fd_read, fd_write): the binding can only
// connect them to files, and the backend keeps the run's streams in
// bounded in-memory buffers instead, with no file on the host.
//
// Deserializing a compiled module runs its code: the cache directory must
// be this process's own. Entries are only read back when their checksum
// matches, and wasmtime refuses entries from another version or
// configuration.
//
// One small cgo file reaches wasmtime's public C API for the
// epoch-deadline callback, which the binding does not expose; a test
// checks its declarations against the binding's header and fails loudly
// when an upgrade changes them.
package wasmtime
