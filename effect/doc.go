// Package effect is how applications run untrusted scripts with Sandbank.
//
// An [Effect] wraps one spi.Backend and owns every guarantee around it, once,
// for every engine: it validates and bounds the input, fetches the script by
// content address and checks its bytes, races the backend against the
// caller's cancellation and a deadline, validates the backend's outcome and
// maps it to a typed [Failure], bounds the output, checks its shape against a
// JSON Schema, and bounds and scrubs every text that comes from a script or a
// backend. Backends (package spi) stay small because of this: they report what
// happened, and the effect decides what it means.
//
// # Errors
//
// Every error is of one of three kinds:
//
//   - a typed failure, a *[Failure] (matched with errors.As, or a code's
//     sentinel such as [ErrLimitExceeded] with errors.Is): what the script
//     did, or the size or encoding of what it was handed. Not retryable.
//   - an invalid call, matching [ErrInvalidCall] with errors.Is: the
//     caller's own mistake (limits above the ceiling, an invalid shape, a
//     malformed address, a call with no script or a Source that does not
//     hash to its Script, a call after Close). Each case has its own
//     sentinel ([ErrInvalidLimits], [ErrInvalidShape], [ErrInvalidAddress],
//     [ErrInvalidSource], [ErrClosed]). Not retryable.
//   - infrastructure: everything else (a backend or store that failed, a
//     backend that did not settle). [Retryable] is true.
//
// A cancelled context always yields the context's error, unwrapped;
// context.Canceled is not retryable, the caller's own deadline is.
//
// [KindOf] maps any error to one [Kind] of a closed set (a failure, an
// invalid call, a closed effect, a cancellation, a deadline, overload,
// infrastructure), and [Retryable] is a function of it; a door (HTTP, MCP,
// Temporal, the command line) keeps only a table from Kind to its own
// code.
//
// Scripts are addressed by content ("sha256:<64 hex>", see
// [record.AddressOf]), or carried by the call itself ([Call].Source),
// which runs exactly as if the script had been stored. Either way a script is bounded by
// [Options].MaxScriptBytes (default [DefaultMaxScriptBytes]).
// Package storage's MemoryStore (bounded, least recently used evicted) and
// DirStore are two [ScriptReader] implementations; any other store reports
// a missing script with an error matching fs.ErrNotExist.
//
// # Results
//
// [Effect.Evaluate] returns the result as canonical JSON text: compact, with
// object keys sorted, strings re-encoded by encoding/json without HTML
// escaping (invalid UTF-8 and lone surrogate escapes become U+FFFD), numbers
// kept exactly as the backend wrote them (so integers past 2^53 stay exact)
// and a duplicate object key keeping its last value. The same value gives the
// same bytes on a first run and on a replay from a durable log.
//
// # The run record
//
// [Effect.Run] is the same run as Evaluate and also returns a [Record]:
// the value or the typed failure, the lines the script logged (bounded by
// [Options].MaxLogLines and MaxLogBytes, defaults [DefaultMaxLogLines] and
// [DefaultMaxLogBytes], each line by [record.MaxLogLineUnits], with a cut
// marker, [Record].LogsCut, when lines were dropped), the run's
// [record.Stats] (the engine's figures only where the engine measured
// them) and a [record.Receipt]:
// canonical JSON naming the script, the input and output digests, the
// engine, the backend module's version, the SPI version, the declared
// capabilities, the effective limits, the outcome, the start time and the
// duration. A record is present for failed runs too, with their logs, and
// stores as JSON; package receipt's Verify checks a stored record against
// its script and input, and against itself field by field
// (docs/record.md). With [Options].Signer every receipt is signed by the
// host's key (Ed25519: receipt.Ed25519Signer holds one in memory, an HSM
// or a KMS implements [record.Signer]), and receipt.Verify with trusted
// keys checks who vouches for the run. Evaluate is Run without the record.
//
// The record's parts ([record.Stats], [record.LogLine], [record.HostCall],
// [record.Receipt]) and a failure's codes and limit kinds ([record.Code],
// [record.LimitKind]) are plain data of package record, below this one,
// so a store, a door or a verifier reads them without the machinery that
// runs scripts.
//
// A call may carry an events sink ([Call].Events): started, each log line,
// host calls begun and ended, finished, delivered in order on a goroutine
// of the run's own, so a slow sink never stalls the engine; past
// [Options].EventBuffer waiting events, log and host-call events are
// dropped and counted in [Record].EventsDropped ([Event] says exactly
// what is kept). [Options].Logger receives the effect's own diagnostics
// (log/slog), and [Options].TracerProvider makes a span per run
// (OpenTelemetry: "sandbank.run", with the engine, the outcome and the
// durations as attributes, host calls as child spans); both are off by
// default, and no global state is read.
//
// # Host calls
//
// A script may ask its host for data while it runs (SPI 1.1): register
// [HostFunc]s by name on [Options].Host and/or [Call].Host, on a backend
// that declares HostCalls (else the call is refused with [ErrInvalidHost]
// before the backend is touched). The backend sees only a per-run broker;
// the effect checks names, bounds arguments ([Options].MaxHostArgBytes,
// default 1 MiB) and answers (MaxHostResultBytes,
// 4 MiB) with errors thrown into the script, ends
// the run past [Options].MaxHostCalls (default [DefaultMaxHostCalls]) with
// limitExceeded ([record.LimitHostCalls]), gives each host function the run's
// context (host time counts toward the wall clock), recovers a panic into
// an untyped error, runs the calls a script has in flight concurrently
// (at most [Options].MaxConcurrentHostCalls, default
// 8, started in the order issued, every one
// cancelled when the run ends), lists each in [Record].HostCalls, and
// delivers none after the run
// ended. See [HostFunc] and ExampleHostFunc.
//
// A durable run ([Call].Durable, on a backend that declares
// Deterministic) may be suspended by a host function's [Suspend] and
// replayed from a log of answers, each call checked against it
// (replayDiverged otherwise); package durable builds such calls and their
// continuations (docs/design.md, "Durable runs").
//
// # Security considerations
//
//   - Refusals by default: a backend that declares network access or an
//     environment reused across runs is refused by [New] unless
//     [Options].AllowNetwork or AllowReusedEnvironment says otherwise. The
//     declaration is read once and frozen; a backend cannot upgrade itself
//     later. [Effect.Idempotent] derives from that snapshot.
//   - Script integrity: the bytes handed to the backend are the bytes whose
//     SHA-256 is the address; a tampered store yields an untyped error, never
//     a run. storage.DirStore also verifies on read, reads only regular files (a
//     FIFO, a device or a symbolic link at a script's path is refused
//     without blocking) and never reads past its size bound.
//   - Bounded cost before any work: the input is serialised and measured
//     (MaxInputBytes) before the script is read or the backend called; the
//     output is measured before it is decoded.
//   - Text from a script or a backend (thrown names and messages,
//     infrastructure messages, backend and reader error text, shape
//     violations, logged lines) is cut to [MaxTextUnits] UTF-16 units
//     ([record.MaxLogLineUnits] for a logged line) plus a visible marker, and
//     made storable: invalid UTF-8, encoded surrogates and
//     control characters other than newline and tab become U+FFFD. It is
//     safe to log and to store, not to interpret as markup.
//   - An error quotes what its caller sent (a name, a shape's parts) only
//     as an [Excerpt]: scrubbed the same way and cut to 128
//     units, so an error stays short whatever the caller sent.
//   - A typed failure that a backend returns as a Go error is reported
//     untyped: only the effect decides what the script did, so a backend
//     cannot forge a non-retryable script outcome.
//   - A backend is raced, not trusted to return: past the wall clock plus
//     [Options].BackendGrace (default [DefaultBackendGrace]) the effect
//     returns without it. A goroutine cannot be killed, so a backend that
//     ignores its context keeps running in the background; an engine that
//     cannot be preempted declares spi.WallClockSoft. Such abandoned calls
//     are counted ([Effect.Abandoned]) and capped ([Options].MaxAbandoned):
//     past the cap new calls fail with [ErrOverloaded] until late returns
//     free their slots. A host function still running once its run ended
//     counts the same, until it returns, on every engine. Warm and Close have deadlines of their own.
//   - A result nested deeper than [MaxOutputDepth] is limitExceeded
//     (output) on every engine, refused before anything parses it.
//   - A shape (JSON Schema) is compiled with every external reference
//     refused: a schema cannot make the effect read a file or reach the
//     network. A shape larger than [MaxShapeBytes] or nested deeper than
//     [MaxShapeDepth] is an invalid call, refused before it is compiled;
//     one where a part of a value may meet more than 8192 subschema
//     checks (every $ref unfolded, every applicator's branches counted)
//     is an invalid call, refused once compiled. A value whose check
//     would pass 2^22 of them is limitExceeded (output), refused
//     before the check: the validator cannot be cancelled, so its work is
//     bounded before it starts.
//   - The effect's own messages have fixed wording and never echo script
//     source or a malformed address. Text relayed from a backend or a script
//     (which may quote the script) is bounded and scrubbed, not filtered.
package effect
