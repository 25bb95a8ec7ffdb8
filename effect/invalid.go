package effect

// This file holds the second kind of error: the caller's invalid request.
// The first kind is the script's typed failure (failure.go); the third,
// retryable infrastructure, is everything else (errors.go).

import "errors"

// ErrInvalidCall matches every error that is the caller's own mistake:
// errors.Is(err, ErrInvalidCall) holds for a nil context, limits that are
// negative or above the ceiling, an invalid shape, a malformed address, a
// call after Close, a call whose Source and Script are missing or disagree,
// an Effect not made by New, and options or a backend that New refuses to
// combine. Such an error is not retryable: the same call fails the same
// way. Each case has its own sentinel below, each of which matches
// ErrInvalidCall too.
var ErrInvalidCall = errors.New("effect: invalid call")

// The sentinels of the invalid-call cases. Each one matches ErrInvalidCall
// with errors.Is, and the error a call returns matches its case's sentinel.
var (
	// ErrInvalidLimits: a call's limits are negative or above the effect's
	// ceiling, or an Options limit or size is negative.
	ErrInvalidLimits error = &invalidSentinel{"effect: invalid limits"}
	// ErrInvalidShape: the call's shape is not a JSON Schema the effect can
	// compile, or it references an external schema.
	ErrInvalidShape error = &invalidSentinel{"effect: invalid shape"}
	// ErrInvalidAddress: the call's Script is not a well-formed content
	// address (see ParseAddress).
	ErrInvalidAddress error = &invalidSentinel{"effect: invalid address"}
	// ErrInvalidSource: the call carries neither Script nor Source, or
	// carries both and Source does not hash to Script.
	ErrInvalidSource error = &invalidSentinel{"effect: invalid source"}
	// ErrClosed: the Effect was closed.
	ErrClosed error = &invalidSentinel{"effect: closed"}
)

// invalidSentinel is a case sentinel: it matches ErrInvalidCall.
type invalidSentinel struct{ msg string }

func (s *invalidSentinel) Error() string { return s.msg }
func (s *invalidSentinel) Unwrap() error { return ErrInvalidCall }

// invalidError is one invalid call: fixed text, matching its case's
// sentinel (and so ErrInvalidCall).
type invalidError struct {
	msg  string
	kind error
}

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return e.kind }

// invalid returns an invalid-call error with text msg matching kind (a
// case sentinel, or ErrInvalidCall itself).
func invalid(kind error, msg string) error { return &invalidError{msg: msg, kind: kind} }

// The invalid calls that have no case of their own.
var (
	errNilContext = invalid(ErrInvalidCall, "effect: nil context")
	errNotNew     = invalid(ErrInvalidCall, "effect: Effect not made by New")
)
