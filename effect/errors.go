package effect

import (
	"context"
	"errors"
)

// ErrOverloaded is matched (with errors.Is) by the error of a call refused
// because Options.MaxAbandoned backend calls have been abandoned and have
// not returned yet. It is infrastructure: retryable, once the backend
// returns (see Effect.Abandoned).
var ErrOverloaded = errors.New("effect: overloaded")

// ErrQuota is matched (with errors.Is) by the error of a call refused
// because its caller is at a quota of its own: a tenant's rate of
// requests, or its cap of runs in flight (package tenant). Its kind is
// KindQuota, which every door answers alike: retryable later, once the
// caller's own runs end or its rate allows.
var ErrQuota = errors.New("effect: the caller's quota is reached")

// untypedError is an untyped (retryable) error carrying bounded text and,
// optionally, the original error it came from.
type untypedError struct {
	msg   string
	cause error
}

func (e *untypedError) Error() string { return e.msg }
func (e *untypedError) Unwrap() error { return e.cause }

// foreignError turns an error returned by a backend or a script reader into
// an untyped error whose text is prefix followed by the original text,
// bounded and scrubbed. The original stays reachable with errors.Is and
// errors.As (so a backend's own error type remains matchable), except when
// it is or wraps a *Failure or ErrInvalidCall (only the effect decides what
// a script did or whether a call was valid, so a backend cannot make its
// error non-retryable that way) or a context
// error (the caller's own cancellation is reported separately, as
// ctx.Err(); a context error from elsewhere must not read as the caller's).
// Inspecting the error is guarded: an Error, Is or As method that panics
// yields fixed text.
func foreignError(prefix string, err error) error {
	text := boundText(errorText(err))
	if keepCause(err) {
		return &untypedError{msg: prefix + text, cause: err}
	}
	return &untypedError{msg: prefix + text}
}

// keepCause reports whether err may stay reachable through Unwrap.
func keepCause(err error) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	var f *Failure
	if errors.As(err, &f) || errors.Is(err, ErrInvalidCall) {
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// errorText returns err.Error(), or fixed text when that panics.
func errorText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = "(error text unavailable)"
		}
	}()
	return err.Error()
}
