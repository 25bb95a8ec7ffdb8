package record

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/internal/canon"
)

// HostCall is one host call of a run, as its effect.Record lists it: every call
// the broker accepted (a known name, an argument within its bound, within
// effect.Options.MaxHostCalls), in the order the script issued them.
type HostCall struct {
	// Name is the host function's name.
	Name string `json:"name"`
	// Issued is when the script made the call, from the start of the run.
	Issued time.Duration `json:"issuedNs"`
	// Start is when the host function began, from the start of the run:
	// later than Issued when the call waited for a slot
	// (effect.Options.MaxConcurrentHostCalls); zero when it never began.
	Start time.Duration `json:"startNs,omitempty"`
	// Duration is the host function's own time (for a call still running
	// when the run ended, until then).
	Duration time.Duration `json:"durationNs,omitempty"`
	// BytesIn is the argument's size; BytesOut the result's.
	BytesIn  int64 `json:"bytesIn"`
	BytesOut int64 `json:"bytesOut,omitempty"`
	// Outcome is what the script got.
	Outcome HostCallOutcome `json:"outcome"`
	// Error is the error's text thrown into the script, bounded and
	// storable (HostCallError, HostCallCanceled).
	Error string `json:"error,omitempty"`
	// Args is the call's argument as JSON text, and Answer the result
	// the script got (HostCallOK): kept only in a durable run's record
	// (effect.Call.Durable), whose log they are.
	Args   json.RawMessage `json:"args,omitempty"`
	Answer json.RawMessage `json:"answer,omitempty"`
}

// HostCallOutcome says what became of a host call. The zero value is
// invalid; values are never renumbered.
type HostCallOutcome int

// The host-call outcomes.
const (
	// HostCallOK: the script got the host function's result.
	HostCallOK HostCallOutcome = iota + 1
	// HostCallError: the script got an error (the host function's, or
	// the broker's refusal of its result).
	HostCallError
	// HostCallCanceled: the run ended first (it was stopped, ran out of
	// time, or finished without awaiting the call); the answer, if any,
	// was not delivered.
	HostCallCanceled
	// HostCallSuspended: the host function answered effect.Suspend and the run
	// ended suspended at this call (a durable run's pending call).
	HostCallSuspended
)

var hostCallOutcomeNames = [...]string{
	HostCallOK:        "ok",
	HostCallError:     "error",
	HostCallCanceled:  "canceled",
	HostCallSuspended: "suspended",
}

// Valid reports whether o is one of the defined outcomes.
func (o HostCallOutcome) Valid() bool { return o >= HostCallOK && o <= HostCallSuspended }

// String returns the outcome's name, such as "ok".
func (o HostCallOutcome) String() string {
	if !o.Valid() {
		return fmt.Sprintf("HostCallOutcome(%d)", int(o))
	}
	return hostCallOutcomeNames[o]
}

// MarshalText implements encoding.TextMarshaler.
func (o HostCallOutcome) MarshalText() ([]byte, error) {
	if !o.Valid() {
		return nil, fmt.Errorf("effect: invalid host call outcome %d", int(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *HostCallOutcome) UnmarshalText(b []byte) error {
	for k := HostCallOK; k <= HostCallSuspended; k++ {
		if string(b) == hostCallOutcomeNames[k] {
			*o = k
			return nil
		}
	}
	return fmt.Errorf("effect: unknown host call outcome %q", b)
}

// HostLogDigest returns the digest a durable run's receipt records of its
// host-call log (Receipt.HostLog): "sha256:<hex>" of the canonical JSON
// text of the calls' names, arguments, outcomes, answers and errors, in
// order (their times left out: they differ between runs).
func HostLogDigest(calls []HostCall) (string, error) {
	type line struct {
		Name    string          `json:"name"`
		Args    json.RawMessage `json:"args,omitempty"`
		Outcome HostCallOutcome `json:"outcome"`
		Answer  json.RawMessage `json:"answer,omitempty"`
		Error   string          `json:"error,omitempty"`
	}
	lines := make([]line, len(calls))
	for i, c := range calls {
		lines[i] = line{Name: c.Name, Args: c.Args, Outcome: c.Outcome, Answer: c.Answer, Error: c.Error}
	}
	return canon.DigestJSON(lines)
}
