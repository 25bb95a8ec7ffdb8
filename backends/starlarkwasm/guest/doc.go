// Command guest is the starlark-wasm guest: the project's in-process
// Starlark engine (backends/starlark) compiled with GOOS=wasip1
// GOARCH=wasm, one run per process. The host (backends/starlarkwasm)
// builds it with go generate and embeds the result. The same code built
// natively for Linux is the starlark-native engine's child
// (backends/starlarknative): started with no arguments, it confines
// itself (confine_linux.go), writes one Ready byte, and reads the
// arguments below as one line on stdin before the payload
// (serve_linux.go).
//
// It reads a wasmguest.SizedPayload from stdin (the nonce, the script as
// a JSON string literal, the input's length, prefixed with "h" when the
// run has host functions, and the input), runs the script through
// starlark.Backend.Evaluate without a wall clock of its own (the host's
// clock is hard: it stops the whole instance), writes the start record
// once the script is compiled and its input converted (the OnStart hook),
// and ends with one framed record: the result, the thrown error, the step
// budget, or a protocol error. An out-of-memory ends the Go runtime with
// "fatal error: out of memory" on stderr and no record; the host reads it
// from what it saw.
//
// The script's host calls (host.NAME, host_try) go to a relay (relay.go)
// that writes a host-call record and blocks reading the reply from stdin
// (wasmguest.ReadReply); its prints, when the run has a log sink, are log
// records on stderr (wasmguest.WriteLog) the host takes out of the stream.
//
// Arguments: the step budget, the result bound in bytes, and the soft
// memory limit of the Go runtime in bytes (debug.SetMemoryLimit), each a
// decimal integer, then 1 when the run has a log sink, else 0. The
// collector is driven by that limit alone in WebAssembly
// (debug.SetGCPercent(-1)), by Go's default and the limit natively.
package main
