package effect

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Failure is a typed failure: the script's own outcome (or the size or
// encoding of what the caller handed it), not retryable. Match it with errors.As, or a code's sentinel with
// errors.Is.
type Failure struct {
	Code Code
	// Kind is the limit hit (CodeLimitExceeded), or what the input did not
	// fit in (CodeInputTooLarge): LimitInput, the input ceiling
	// (MaxInputBytes), before the run; LimitMemory, the engine's memory
	// while parsing the input.
	Kind LimitKind
	// Name and Message describe the error (CodeScriptError), bounded and
	// storable.
	Name    string
	Message string
	// Reason says why (CodeInputNotSerializable; CodeSuspended: the host
	// function's reason; CodeReplayDiverged: which call; CodeShapeMismatch: the
	// first violation; CodeLimitExceeded, when the effect can say more
	// than the kind: the output depth limit, which bound of the output
	// files; CodeInputTooLarge with LimitInput for the input files:
	// which of their bounds, and then Bytes and Limit are zero), bounded.
	Reason string
	// Bytes and Limit size the input (CodeInputTooLarge): Limit is
	// MaxInputBytes when the input was refused before the run, or the
	// memory limit when it did not fit while being parsed. For
	// CodeScriptTooLarge they size the script against MaxScriptBytes. For
	// CodeLimitExceeded with Kind LimitHostCalls, Limit is MaxHostCalls;
	// with LimitSuspensions or LimitHostLog, the durable run's bound.
	Bytes int64
	Limit int64
	// Script is the missing script's address (CodeScriptMissing).
	Script Address
}

// Error implements error. The text starts with "effect:", has fixed
// wording and never echoes script source: "effect: limitExceeded (memory)",
// "effect: limitExceeded (output): <reason>", "effect: scriptError:
// TypeError: boom", "effect: inputTooLarge (40 bytes of input, over the
// input ceiling of 32 bytes)" (or "… did not fit in the engine's memory
// limit of 32 bytes while being parsed)"), "effect: scriptTooLarge (40 bytes, limit 32)", "effect:
// scriptMissing (sha256:…)", "effect:
// inputNotSerializable: <reason>", "effect: shapeMismatch: <first
// violation>".
func (f *Failure) Error() string {
	switch f.Code {
	case CodeInputNotSerializable:
		return "effect: inputNotSerializable: " + f.Reason
	case CodeInputTooLarge:
		n, limit := strconv.FormatInt(f.Bytes, 10), strconv.FormatInt(f.Limit, 10)
		switch f.Kind {
		case LimitInput:
			if f.Reason != "" {
				return "effect: inputTooLarge (input files): " + f.Reason
			}
			return "effect: inputTooLarge (" + n + " bytes of input, over the input ceiling of " + limit + " bytes)"
		case LimitMemory:
			return "effect: inputTooLarge (" + n + " bytes of input did not fit in the engine's memory limit of " + limit + " bytes while being parsed)"
		default:
			return "effect: inputTooLarge (" + n + " bytes, limit " + limit + ")"
		}
	case CodeScriptTooLarge:
		return "effect: scriptTooLarge (" + strconv.FormatInt(f.Bytes, 10) + " bytes, limit " + strconv.FormatInt(f.Limit, 10) + ")"
	case CodeScriptMissing:
		return "effect: scriptMissing (" + string(f.Script) + ")"
	case CodeLimitExceeded:
		if f.Reason != "" {
			return "effect: limitExceeded (" + f.Kind.String() + "): " + f.Reason
		}
		return "effect: limitExceeded (" + f.Kind.String() + ")"
	case CodeScriptError:
		if f.Name == "" {
			return "effect: scriptError: " + f.Message
		}
		return "effect: scriptError: " + f.Name + ": " + f.Message
	case CodeShapeMismatch:
		return "effect: shapeMismatch: " + f.Reason
	case CodeSuspended:
		return "effect: suspended: " + f.Reason
	case CodeReplayDiverged:
		return "effect: replayDiverged: " + f.Reason
	default:
		return "effect: " + f.Code.String()
	}
}

// Unwrap returns the sentinel of f.Code, or nil for an invalid code.
func (f *Failure) Unwrap() error {
	switch f.Code {
	case CodeInputNotSerializable:
		return ErrInputNotSerializable
	case CodeInputTooLarge:
		return ErrInputTooLarge
	case CodeScriptMissing:
		return ErrScriptMissing
	case CodeLimitExceeded:
		return ErrLimitExceeded
	case CodeScriptError:
		return ErrScriptError
	case CodeShapeMismatch:
		return ErrShapeMismatch
	case CodeScriptTooLarge:
		return ErrScriptTooLarge
	case CodeSuspended:
		return ErrSuspended
	case CodeReplayDiverged:
		return ErrReplayDiverged
	default:
		return nil
	}
}

// MarshalJSON encodes f with its code's name and the fields that code
// uses, for example {"code":"limitExceeded","kind":"memory"},
// {"code":"scriptError","name":"TypeError","message":"boom"} (name is left
// out when empty), {"code":"inputTooLarge","bytes":40,"limit":32} (with
// a "reason" for the input files' bounds),
// {"code":"scriptMissing","script":"sha256:…"}, and
// {"code":"inputNotSerializable","reason":"…"} or
// {"code":"shapeMismatch","reason":"…"}. An invalid code, or an invalid
// limit kind for limitExceeded, is an error.
func (f *Failure) MarshalJSON() ([]byte, error) {
	type wire struct {
		Code    string  `json:"code"`
		Kind    string  `json:"kind,omitempty"`
		Name    string  `json:"name,omitempty"`
		Message *string `json:"message,omitempty"`
		Reason  *string `json:"reason,omitempty"`
		Bytes   *int64  `json:"bytes,omitempty"`
		Limit   *int64  `json:"limit,omitempty"`
		Script  string  `json:"script,omitempty"`
	}
	if !f.Code.Valid() {
		return nil, fmt.Errorf("effect: cannot encode a failure with invalid code %d", int(f.Code))
	}
	w := wire{Code: f.Code.String()}
	switch f.Code {
	case CodeInputNotSerializable, CodeShapeMismatch, CodeSuspended, CodeReplayDiverged:
		w.Reason = &f.Reason
	case CodeInputTooLarge:
		w.Bytes, w.Limit = &f.Bytes, &f.Limit
		if f.Kind.Valid() {
			w.Kind = f.Kind.String()
		}
		if f.Reason != "" {
			w.Reason = &f.Reason
		}
	case CodeScriptTooLarge:
		w.Bytes, w.Limit = &f.Bytes, &f.Limit
	case CodeScriptMissing:
		w.Script = string(f.Script)
	case CodeLimitExceeded:
		if !f.Kind.Valid() {
			return nil, fmt.Errorf("effect: cannot encode a failure with invalid limit kind %d", int(f.Kind))
		}
		w.Kind = f.Kind.String()
		if f.Reason != "" {
			w.Reason = &f.Reason
		}
	case CodeScriptError:
		w.Name, w.Message = f.Name, &f.Message
	}
	return json.Marshal(w)
}

// Retryable reports whether err is worth retrying: KindOf(err).Retryable().
// It is false for nil, for a *Failure (the script's own outcome: a retry
// gives the same answer), for an invalid call (errors.Is(err,
// ErrInvalidCall), ErrClosed included: the same call fails the same way)
// and for context.Canceled (the caller gave up). It is true for
// everything else, which is infrastructure: a backend or a store that
// failed, a backend that did not settle, ErrOverloaded, and a
// context.DeadlineExceeded of the caller's own deadline (more time may
// help).
func Retryable(err error) bool { return KindOf(err).Retryable() }
