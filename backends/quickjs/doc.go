// Package quickjs is the JavaScript reference backend of Sandbank: the
// official QuickJS-NG v0.11.0 WASI build (github.com/paralin/go-quickjs-wasi)
// run by wazero. Application code does not call it directly: hand the
// backend returned by [New] to package effect, which owns every guarantee
// around it, or select it by its engine name "quickjs" in the registry.
//
// One backend holds one wazero runtime and one compiled module (compiled
// by Warm or by the first Evaluate, optionally cached on disk with
// Options.CompilationCacheDir). Any number of Evaluate calls run side by
// side, one instance each.
//
// # Modes
//
// Every run sees exactly the engine a new instance would give it; the two
// modes (Options.Mode) differ in how.
//
//   - ModeParked (the default; engine "quickjs"): a pool of parked
//     instances per memory limit (Options.PoolSize, GOMAXPROCS by default;
//     Warm boots the pool of DefaultMemoryBytes). Each instance is booted
//     once, on a goroutine of its own, and stopped inside its first read
//     of the request, where the host snapshots it: the native call stack
//     (wazero's experimental Snapshotter), all of linear memory (about
//     320 KiB), every mutable global, the fake clocks and the random
//     source. A run restores all of it, writes its stack canary, serves
//     that read from its own request and resumes the guest; at the
//     guest's proc_exit the host takes the result and parks the instance
//     again. A run that finds no parked instance boots one, as a fresh run
//     would; at most four memory limits keep a pool, and a run with any
//     other limit uses a one-shot instance. Measured on two cores with the
//     hard kill on, an echo through the effect takes 0.27 ms at the median
//     in this mode and 4.9 ms in ModeFresh (docs/performance.md); a CPU-bound script (the
//     reshape benchmark) keeps its instance even though it grows linear
//     memory (see the safety argument). Parked mode uses only wazero's
//     public API, helped by rewriting passes (internal/wasm/rewrite) that
//     export every mutable global, make the park point's read repeatable,
//     virtualise the memory's size and prove that no table is ever
//     written; when that proof does not hold for the module, New says why
//     and the backend runs in ModeFresh instead ([Backend.Mode],
//     [Backend.ParkedModeError]), rather than failing at run time.
//   - ModeFresh (engine "quickjs-fresh"): a new module instance per run,
//     booted inside the run.
//
// Parked mode's safety argument. The guest's whole state is its linear
// memory, its globals, its tables, its native call stack and what the host
// keeps for it (the WASI descriptors, clocks, random source, stdin and
// output buffers). The engine's heap, the JavaScript globals and
// prototypes, the symbol registry, job queues, the libc stdio buffers and
// the C stack all live in linear memory. A run restores every one of these
// to the park point: memory by copy (and zeros above the park point's
// size in a memory a run grew), globals through the exports a pass adds,
// the stack by restoring a snapshot taken at the park point (a new one
// for every run, since a snapshot is restored once), clocks and the
// random source by resetting them, and stdin, stdout and stderr are the
// run's own. The tables need no restore: a pass proves that none is ever
// written (no table.set, grow, fill, copy or init, no imported or
// exported table). A grown memory is kept: the rewritten module's memory
// size is a global, restored with the others (internal/wasm/rewrite's
// memory-size pass). What a restore cannot cover ends the instance
// instead: a run is followed by another only when it ended in proc_exit
// with code 0 after a result or a thrown record, its canary intact,
// linear memory not refused, no WASI call outside the expected set (args,
// environ, clocks, random, fd_fdstat_get, fd_prestat_*, fd_write, fd_read
// of stdin, proc_exit; any other answers ENOSYS), no wall clock, cancel or
// Close, and the instance has served fewer than 2,048 runs (each
// snapshot's stack is 16 bytes longer than the one it was taken from).
// Every other ending (a trap, a kill, a stack overflow, an out-of-memory)
// discards the instance, and a replacement boots off the request path. A
// differential test runs a corpus of scripts built to observe leftovers
// (prototype pollution, globals, let bindings, the symbol registry,
// WeakRef and FinalizationRegistry, pending jobs, clock and random
// sequences, thrown errors, caught out-of-memory errors) in both modes,
// each also right after every other one on the same parked instance, and
// requires byte-identical outcomes; that is what backs FreshPerRun in
// this mode.
//
// Limits of that argument: it is as strong as the list of state above.
// It relies on wazero's experimental Snapshotter doing what its
// documentation says (a snapshot, restored from a later host call of the
// same call of _start, resumes the guest there; the backend restores each
// snapshot once); a wazero bug in Snapshot or Restore would be shared by
// every run of an instance. Timing is not isolated: a run can observe how
// warm the host's caches are, as in any pool. A parked instance holds its
// memory, a copy of it and a goroutine while it waits.
//
// # The script contract
//
// The script is JavaScript source evaluated as a classic global script
// (not an indirect eval: a top-level var or function declaration is a
// non-deletable property of globalThis, under "use strict" too; let,
// const and class are global lexical bindings). It sees a global input
// holding the caller's
// JSON input, parsed inside the engine. Its result is its completion
// value (the value of the last expression statement), returned as JSON
// text (JSON.stringify, so toJSON methods run and non-finite numbers
// become null). A thrown value becomes a thrown outcome with the error's
// name and message; a syntax error of the script is thrown with the name
// "SyntaxError" and a message ending in its position, as in "unexpected
// token in expression: ';' (line 3, column 9)": QuickJS's line, and the
// column where goja's parser finds the error on that line (QuickJS's own
// column is not the user's; without goja's on the same line, the
// position is the line alone);
// a completion value JSON cannot represent (undefined, a function, a
// symbol, a BigInt, a cycle) is thrown as a "TypeError" saying so. print
// and console.* write to a bounded stderr that is not part of the result.
//
// A thenable completion value is awaited (docs/async.md): the wrapper
// adopts it with the Promise.resolve captured before the script ran, and
// the engine runs its job queue within the run's wall clock and memory
// limit. Fulfilled: the value is the result; rejected: a thrown outcome
// read as a thrown value is; still pending once the queue is empty: a
// thrown "Error", "the script's promise never settled". A script whose top
// level uses await (or for await) runs as an async function through the
// shared front end (internal/jsfront), and its last expression is its
// result:
//
//	const r = await Promise.resolve(41)
//	r + 1 // the result is 42
//
// A completion value that is not thenable is written at once and no job
// runs. An unhandled rejection does not change the result. There are no
// timer globals.
//
// A script too large to be read within the memory limit (12 MB under the
// default 32 MiB: the engine holds it twice while it reads it) is the
// memory limit, reported before it runs; the input's own size is never
// blamed for it. A completion value nested deeper than the C stack
// allows in JSON.stringify (tens of thousands of levels at the default
// 1 MiB) is the thrown RangeError; below that, the effect's output depth
// limit (10,000) applies.
//
// # Host calls
//
// In a run with host functions (SPI 1.1) the script has a global host, as
// on goja: every member returns a promise of the host's answer
// (`await host.orders({since: "2026-01-01"})`), a failed call rejects with
// an Error carrying the effect's text, and calls run one at a time in the
// script's order. Over the guest protocol a call is a framed H record on
// stdout ([name, argument JSON]) after which the guest blocks reading
// stdin until the host serves the reply (internal/wasm/guest/hostcall.go); the
// input is length-prefixed on stdin so that the stream stays open. The
// same holds on wasmtime. In parked mode the reply reader belongs to the
// run, and the park point and its restore are unchanged: a run that made
// host calls leaves nothing behind (the differential corpus proves it).
//
// # Security considerations
//
// The engine has no host capability by construction, and each run gets
// none: no preopened directory, no environment variables, a fake clock
// that starts at 2000-01-01T00:00:00Z and advances one millisecond per
// reading (Date.now() reveals nothing about the host or about earlier
// runs), a deterministic random source, and arguments the backend controls
// (the wrapper deletes execArgv, scriptArgs and argv0, and qjs's host
// globals DOMException, gc, navigator, performance and queueMicrotask,
// before the script runs; what stays beyond ECMAScript, print and console,
// is declared by HostObjects and measured by the kit). The engine's modules qjs:std and qjs:os can be
// named in a dynamic import(), and a script that awaits it gets them; with
// no preopens, no environment, fake clocks, a no-op sleep and no
// processes they reach nothing on the host. What they add inside the
// sandbox: os.setTimeout (timers on the fake clock, under the same wall
// clock; a zero-delay timer of the wrapper reports a promise that never
// settled as soon as the job queue is empty, so a script's own timer
// rarely fires), std.exit (the run ends without a result), and writes to
// stdout (which cannot forge a record without the nonce).
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
// oversized allocations on this build, such as "x".repeat(3e8)). A run
// whose growth was refused and that ends in a thrown value is the memory
// limit, whatever was thrown (QuickJS throws null once it cannot allocate
// its own InternalError "out of memory"); a value it returned after
// catching the refusal stays its value.
//
// Wall clock: the module is QuickJS rewritten once per process by
// internal/wasm/rewrite's preemption pass (Options.StopCheck, on by
// default; off, the module runs as shipped and the backend declares
// WallClock soft). Every loop header and call counts a unit inside
// compiled code, bulk memory work a unit per KiB in chunks, and the guest
// visits the host every 4,096 units, where a run whose context is done is
// stopped: at the deadline, even inside one long native operation, and
// without wazero's close-on-context-done, whose check left compiled code
// for Go at every loop header (64-69% of a CPU-heavy run). The visits
// also keep the goroutine running the guest preemptible, so a script
// never holds up the process's garbage collector. When the clock
// runs out the run's stdout is sealed first, so a result the guest writes
// from then on is never read; and a result whose record arrived more than
// the wall clock after the start record is the wall-clock limit even when
// the timer had not fired yet (a loaded machine; the soft mode): a value
// after the deadline is never delivered. The clock is
// armed when the guest reports that the script starts, after the engine
// booted and parsed the input; those phases have their own bound,
// Options.ColdStartAllowance (by default 30 s plus 4 s per MiB of input),
// and exceeding it is a [*StartupError], never a limit. Waiting for the module's compile, once
// per process, is not charged to the allowance either: it is bounded by
// the caller's context, so a slow compile on a loaded machine never fails
// a run.
//
// The C stack: this build has no stack check and a 64 KiB C stack that
// sits directly above the static data, so a deep recursion would silently
// overwrite static data (measured without a guard: one over-deep run
// returned a well-formed wrong value). The backend runs the module
// rewritten by internal/wasm/rewrite's stack pass: a C stack of
// Options.StackBytes (default 1 MiB) of its own, after the module's
// initial memory, where the allocator never reaches (wasi-libc's dlmalloc
// takes its first heap from linker constants and grows with memory.grow,
// above it), and a bound check after every move of the stack pointer,
// which stops a frame before it writes one byte below the stack (stack.go;
// New fails if the pass cannot identify the stack pointer or meets a use
// of it it does not know). A recursion too deep is the thrown RangeError
// "Maximum call stack size exceeded", as on V8, except that a script
// cannot catch it: the run ends there, and its instance is discarded (in
// parked mode too). The 1 KiB random canary the backend writes at the
// stack's bottom before each run, and checks after, stays as a second
// line of defence: a clobbered canary is read as the same RangeError, never
// as a value.
//
// # Limits
//
//   - Recursion: plain JavaScript recursion of 3,616 frames fits in the
//     default 1 MiB C stack, 885 in 256 KiB, and 17,368 from about 5 MiB
//     on, where wazero's own native call stack binds first (its trap is
//     read as the same RangeError); docs/recursion.md has the table and
//     the command that prints it. QuickJS's --stack-size has no effect on
//     WASI. JSON.parse of the input handles about 65,000 levels of nesting
//     at the default; an input nested so deeply that parsing it overflows
//     the stack is reported as InputTooLarge.
//   - CPU: Options.Fuel, when set, is a deterministic budget in the stop
//     check's units (a run that spends it ends in the limit cpu; the
//     backend then declares CPU); without it there is no CPU budget and
//     the backend declares CPU false.
//   - Memory: at most 4 GiB (the 32-bit address space). The engine needs
//     its C stack (Options.StackBytes, 1 MiB by default) plus between 256
//     and 512 KiB to boot; a smaller limit is reported as the memory
//     limit. On Linux, linear memory is one reserved mapping of the
//     limit, committed only as the guest touches it, so growing costs the
//     host no copy (a 1 GiB run is stopped at its clock within a few ms).
//   - Speed: string-heavy work is slow in this build. In
//     parked mode, a run that grew linear memory leaves its instance
//     holding the grown memory: the next run's restore zeroes it (the
//     first MiB above the park point in place, about 50 µs per MiB; whole
//     pages past it go back to the kernel), and the instance's resident
//     memory is up to its park point plus what the last run touched.
//   - An access past the guest-visible memory size but inside the real
//     (grown) memory reads or writes instead of trapping, in parked mode
//     only: the bounds checks are wazero's, against the real size. It
//     reads zeros, never an earlier run's bytes. QuickJS makes no such
//     access (a corrupted engine could, and the trap it would meet on a
//     fresh instance is not guaranteed here).
//   - A script can throw its own InternalError("out of memory"), which is
//     reported as the memory limit: the engine's out-of-memory error cannot
//     be told apart from a copy.
package quickjs
