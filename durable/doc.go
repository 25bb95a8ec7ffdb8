// Package durable runs scripts that may wait at a host call for minutes or
// days without holding a process: a host function answers "not yet" with
// effect.Suspend, the run ends suspended with a [Continuation], and
// [Resume] continues it later, on any process with the same engine, by
// replaying the script from the start (docs/design.md, "Durable runs").
//
// A continuation holds the suspended run's receipt (the script's address,
// the input's digest, the engine, its backend's version, the SPI version,
// the limits, the digest of the host-call log, the count of suspensions,
// signed by the effect's Signer when it has one), the input, the host-call
// log (each call's name, arguments and answer, in the order the script
// issued them) and the pending call. [Continuation.Encode] writes it as
// canonical JSON; [Decode] reads it back, bounded.
//
// Resume answers the logged calls from the log, each checked against it
// (the same name and canonical arguments, in the same order), else the
// run ends with the typed failure effect.CodeReplayDiverged; then the
// pending call gets the new answer and the run goes on live, each segment
// with its own wall clock. It refuses a continuation that does not agree
// with itself, or whose receipt's signature does not verify against the
// keys it is given, with ErrInvalidContinuation; the effect refuses one of
// another script, input, engine or version.
//
// Only an engine that declares spi.Capabilities.Deterministic runs
// durably. The bounds are MaxSuspensions and MaxLogBytes.
//
// This package returns continuations whole; a door keeps them in a
// storage.ContinuationStore (the HTTP and MCP doors do). Kept for later:
// the Temporal door and the conformance kit's cases for Deterministic.
package durable
