// Package spi is the backend service-provider interface of Sandbank: what an
// engine author implements to plug a sandbox engine (QuickJS in wasm,
// Starlark, Extism, a remote microVM service, …) into Sandbank.
//
// Application code does not call a [Backend] directly: it uses package
// effect, which owns every guarantee around the engine (input and output
// bounds, the content-addressed script check, the race against cancellation
// and the deadline, outcome validation, bounded error text, capability
// refusals). This package is deliberately small and depends only on the
// standard library, so that a backend module pulls in nothing else.
//
// # The contract
//
// A backend receives a [Request] holding verified script bytes, the caller's
// input as JSON text and the [Limits] to enforce. It exposes the parsed input
// to the script, runs it, and reports what happened as an [Outcome]: a value
// (JSON text), a limit that stopped the script, a thrown error, an input that
// did not fit in memory, or an infrastructure failure. A Go error returned
// from [Backend.Evaluate] means no outcome was obtained at all; the effect
// reports it as an untyped, retryable error.
//
// A backend declares what it enforces with [Capabilities]. Declarations are
// checked against behaviour by package conformance; declare only what the kit
// proves.
//
// # Logs and stats (SPI 1.1.0)
//
// A backend that declares [Capabilities].Logs writes every line a script
// logs to [Request].Logs (a [LogSink] the effect owns), with its
// [LogLevel] and [LogStream], in order; [LineWriter] turns a byte stream
// into lines. The sink bounds, scrubs and counts; it never blocks, and it
// says when it is full so that a backend can stop producing lines. An
// Outcome carries [Stats], the figures only the engine knows (start-up
// time, script time, memory high-water, CPU units), each present only
// where it was truly measured.
//
// Optional behaviour is discovered by type assertion, as database/sql/driver
// does: a backend may implement [Warmer] (advisory pre-warm) and io.Closer
// (release pools, runtimes, compiled modules).
//
// # Host calls (1.1)
//
// A backend that declares [Capabilities].HostCalls relays a script's host
// calls to [Request].Host, the effect's per-run broker ([Host]): the name
// as written and one argument as JSON text in, the answer as JSON text
// out, every error thrown into the script as is. The broker owns every
// rule (names, sizes, counts, the context, the end of the run).
//
// # Versioning
//
// [Version] is the semantic version of this interface. Closed enumerations
// are never renumbered; new values are additions in a minor version. 1.1.0
// added [Request].Host and [Capabilities].HostCalls (and the run record's
// log sink and stats); a 1.0 backend compiles and works unchanged. 1.2.0
// added [StartupError], the error of a backend whose start-up overran its
// cold-start allowance. 1.3.0 added [HostStarter], the broker's way of
// running several host calls of one run at once. 1.4.0 added
// [Capabilities].Deterministic, the declaration that lets a run suspend
// and resume by replay. 1.5.0 added files: [Request].Files,
// [Outcome].Files, [Limits].MaxOutFiles and MaxOutFileBytes,
// [Capabilities].Files, [LimitFiles] and [CheckFileName].
package spi
