// Package effect is how applications run untrusted scripts with Sandbank.
//
// An [Effect] wraps one spi.Backend and owns every guarantee around it, once,
// for every engine: it validates and bounds the input, fetches the script by
// content address and checks its bytes, races the backend against the
// caller's cancellation and a deadline, validates the backend's outcome and
// maps it to a typed [Failure], bounds the output, checks its shape against a
// JSON Schema, and bounds and scrubs every text that comes from a script or a
// backend.
//
// Typed failures (a *[Failure], matched with errors.As or a code's sentinel
// with errors.Is) are the script's own doing, or the caller's input, and are
// not worth retrying. Every other error is untyped and retryable. A cancelled
// context always yields the context's error.
package effect
