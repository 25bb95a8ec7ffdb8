// Package starlarkwasm is the Starlark engine with a hard memory cap and a
// hard clock: the project's in-process Starlark engine (backends/starlark,
// go.starlark.net) compiled with GOOS=wasip1 GOARCH=wasm into a guest
// module (./guest, embedded as guest.wasm), run by wazero in a new
// instance per run. It registers as the engine "starlark-wasm"; the
// script contract, the value conversion, the step budget and the fixtures
// are exactly the in-process engine's, because the guest runs that very
// code.
//
//	b, err := starlarkwasm.New(nil)
//	…
//	e, err := effect.New(scripts, b, nil)
//
// # How a run works
//
// The host writes an internal/wasm/guest sized payload to the guest's stdin
// (a per-run nonce, the script, the input's length, marked when the run
// has host functions, the input). The guest reads it, calls the
// in-process engine's Evaluate without a clock of its own, and writes
// nonce-framed records to stdout: the start record once the script is
// compiled and its input converted (starlark.Options.OnStart), then one
// record with the result, the thrown error or the exhausted step budget.
// The host arms the script's wall clock when the start record arrives,
// seals stdout and stops the instance when it runs out, and reads what
// the run left behind into an outcome. The stop is internal/wasm/rewrite's
// stop check, which the guest module carries (rewritten once per process):
// a counter at every loop header and function entry, a visit to the host
// every few thousand units, which ends the call once the run's context is
// done. It replaced wazero's close-on-context-done, whose check left
// compiled code at every loop header: reshape runs in half the time with
// it (go test -bench Reshape ./backends/starlarkwasm: 2.41 s before, 1.18 s
// after, in one session on a loaded machine).
//
// Declared capabilities: Network none (the guest has no sockets), WallClock
// hard, Memory true, CPU true (the step budget, Options.MaxSteps),
// FreshPerRun true, HostCalls true and Logs true.
//
// # Host calls and logs
//
// The script sees what the in-process engine offers, because the guest
// runs that code with a broker and a log sink of its own:
//
//   - host.NAME(arg) and host_try(NAME, arg), in a run with host functions
//     only. The guest writes a host-call record (the body is the JSON
//     array [NAME, the argument's JSON text]) and blocks reading its
//     stdin; the host's reader of stdin (wasmguest.Stdin) takes the
//     record, asks the request's broker with the run's context, and serves
//     the reply "O<bytes>\n" and the answer's JSON text, or "F<bytes>\n"
//     and the failure's text, which the script gets as the error's
//     message exactly. Calls are made one at a time, in the script's
//     order. The read returns as soon as the run is stopped (the wall
//     clock, cancellation, Close), even when the broker does not; the
//     instance is then closed. Time in a host call counts toward the wall
//     clock.
//   - print, when the request has a log sink (the guest's fourth
//     argument says so): every line, cut at spi.MaxLogLineBytes, is a log
//     record (level and stream digits, the length in bytes, the line) that
//     the host's wasmguest.LogTap takes out of stdout as it arrives and
//     hands to the sink, in order, ahead of any later host call. Log
//     records never reach the record sink, so a script printing without
//     end cannot crowd out its result; once the sink is full the host
//     drops the rest. Without a sink print goes nowhere.
//
// A host call's round trip costs about a fifth of a millisecond (the
// guest's share, converting in WebAssembly, is most of it; about 10 µs in
// process: BenchmarkHostCall, docs/performance.md). The run's Stats are
// not reported: the guest's clocks are fake.
//
// # Memory
//
// Each run's linear memory is capped at the request's memory limit (at
// most MaxMemoryBytes) by the host's allocator (internal/wasm/host): memory.grow past it fails
// and the guest's Go runtime ends with "fatal error: out of memory", which
// the host reads as limitExceeded memory (or inputTooLarge before the
// script started, once the guest began reading its input; or the memory
// limit when the Go runtime could not even boot). It is never a script
// error: nor is one operation asking for a gigabyte or more, which the
// interpreter refuses itself before touching the memory ("excessive
// repeat"), always past the cap, so limitExceeded memory too. The guest's Go runtime runs with a soft memory limit of seven
// eighths of the cap (debug.SetMemoryLimit), so the collector works harder
// before the cap is reached.
//
// # Notes
//
// The module (about 6 MB) is compiled once per process, on first use or
// by Warm, into a runtime every backend of the process without a cache
// directory shares (several seconds on a loaded machine;
// Options.CompilationCacheDir keeps it on disk for the next process, which
// cmd/sandbank does). Every run then starts a new Go runtime: tens of
// milliseconds, against a fraction of one for the in-process engine; and
// the interpreter runs about twenty times slower compiled to WebAssembly
// (docs/performance.md). So "starlark" stays the default Starlark engine;
// choose "starlark-wasm" when the script is untrusted enough that a
// memory bomb or one long built-in operation must not reach the host.
// Instances are not parked and restored (QuickJS's parked mode), so every
// run pays the start-up.
//
// # Security considerations
//
//   - The guest has no filesystem, no environment, no arguments beyond
//     three numbers, a fake wall clock and monotonic clock
//     (internal/wasm/host.Isolate) and seeded randomness. Starlark offers a
//     script no clock, no randomness and no I/O anyway; print reaches only
//     the log sink, as framed log records.
//   - The script cannot reach the guest's stdout or stderr: the records
//     are written by the guest program, and carry a nonce the script never
//     sees. A printed line is the length-delimited body of a log record,
//     so it cannot end its record early or pass for another (a forged
//     record inside it is only text). The host keeps a bounded prefix of
//     each stream, plus at most one log record in the tap.
//   - The Go runtime's fatal errors are read from stderr ("fatal error: out
//     of memory", "fatal error: stack overflow"); a value nested deeply
//     enough to overflow the goroutine stack in the in-process engine ends
//     the guest instead of the host, and is reported as a thrown error (or
//     the memory limit, which a deep stack usually reaches first).
//   - On Linux a run's linear memory is one reserved mapping of the limit
//     (internal/wasm/host.Allocator): the host commits only the pages the
//     guest touches, and unmaps them when the run ends. Elsewhere it is a
//     Go slice that grows by doubling, so the host briefly holds up to
//     about twice the limit per run (TestMeasuredBombsEndTyped measures
//     the growth).
//   - A script whose compile alone does not fit in the memory limit is
//     reported as inputTooLarge, not as the memory limit: the host cannot
//     tell the script's compile from the input's conversion, both of which
//     come before the start record.
package starlarkwasm
