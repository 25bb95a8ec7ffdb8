package spi

import (
	"context"
	"encoding/json"
)

// Host is the broker through which a running script asks its host for data
// (SPI 1.1). The effect makes one per run and puts it in [Request].Host
// when the call has host functions; the backend never sees the host
// functions themselves, only the broker, and calls it when the script
// calls host function name.
//
// The contract for a backend that declares [Capabilities].HostCalls:
//
//   - args is the script's one argument as JSON text ("null" when it gave
//     none); name is the member the script called, as written. The broker
//     checks both: a backend does not filter names or sizes.
//   - On success the result is JSON text the backend hands the script as
//     a decoded value (a JavaScript promise's value, a Starlark value, a
//     wasm guest's bytes).
//   - Every error Call returns is thrown into the script as an Error whose
//     message is err.Error(), exactly (the script may catch it). When the
//     broker decides the run must end (too many calls, a host function
//     that panicked, the wall clock spent in a host call), it cancels the
//     run's context as it returns the error: the backend stops as for any
//     cancellation and may report any outcome; the effect maps the run
//     from what the broker recorded.
//   - ctx is the run's context as the backend received it in Evaluate (or
//     one derived from it). A backend that calls concurrently gets them
//     answered concurrently, in no promised order; a backend whose
//     language lets a script have several calls in flight issues them
//     through [HostStarter] instead, so that the broker sees them in the
//     script's order.
//   - The broker refuses every call once Evaluate has returned: a backend
//     must not keep a Host past its run.
//
// Call is safe for concurrent use.
type Host interface {
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// HostStarter is implemented by a [Host] that runs several calls of one
// run at once (SPI 1.3; the effect's broker does): a backend whose
// language lets a script have several host calls in flight (a promise per
// call) issues each with Start, in the order the script makes them, and
// hands the script each answer as it arrives.
//
// Start issues the call and returns at once; the broker checks it, counts
// it and runs it (or queues it behind the calls already running, in the
// order issued) exactly as Call would. done is called exactly once with
// what Call would have returned, on a goroutine of the broker's or before
// Start returns (a call refused at once); it must not block. Once the run
// has ended, done is called with an error, which the backend drops: no
// answer reaches a script after its run ended. Start is safe for
// concurrent use.
type HostStarter interface {
	Host
	Start(ctx context.Context, name string, args json.RawMessage, done func(answer json.RawMessage, err error))
}
