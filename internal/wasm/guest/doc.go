// Package guest is the engine-neutral protocol between a host and a
// WASI guest program that runs one script per run: the per-run [Nonce],
// the stdin [Payload], and the host's bounded stdout sink ([Stdout]) that
// finds the nonce-framed records the guest writes and hands back the one
// conclusive [Record].
//
// A record is FramePrefix, the nonce, a kind letter (RecStart, RecResult,
// …) and, for a result or a thrown record, the body's length in UTF-16
// code units, a newline, the body, and the end marker (FramePrefix, the
// nonce, "E\n"). Other records end right after the kind letter with a
// newline. The start record tells the host that the start-up phases are
// over and the script's wall clock starts now. A host-call record (see
// [Stdin]) is answered on stdin ([Reply], read by [ReadReply]). A log
// record, on stderr, carries one line the script logged, which the host's
// [Stderr] takes out of the stream for the run's log sink ([WriteLog]).
//
// It knows nothing about the engine inside the guest (QuickJS for
// backends/quickjs, go.starlark.net for backends/starlarkwasm) nor about
// the WebAssembly runtime that hosts it. Application code never uses this
// package.
//
// # Security considerations
//
// The nonce travels only on stdin, so a script that can reach the guest's
// stdout still cannot write a record the host accepts. The sink keeps a
// bounded prefix of what the guest writes and never fails a write, and it
// can be sealed when the script's wall clock runs out, so a record
// finished after the deadline is never read.
package guest
