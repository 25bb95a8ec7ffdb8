package client

import (
	"errors"
	"net/http"
	"time"

	"github.com/sandbank/sandbank/effect"
)

// The sentinels an *Error matches with errors.Is.
var (
	// ErrRetryable: a 429, a 5xx, or a failed connection; the same request
	// may succeed later.
	ErrRetryable = errors.New("client: retryable")
	// ErrUnauthorized: 401, no key or an unknown one. It matches
	// effect.ErrInvalidCall too.
	ErrUnauthorized = errors.New("client: unauthorized")
	// ErrNotFound: 404, no such script in the tenant's store. It matches
	// effect.ErrInvalidCall too.
	ErrNotFound = errors.New("client: not found")
)

// Error is an error response, or a request that got none. It is the
// caller's invalid request (matching effect.ErrInvalidCall) or retryable
// infrastructure (matching ErrRetryable, and effect.ErrOverloaded too when
// the server's kind is overloaded), never both; effect.KindOf tells them
// apart as for the effect's own errors.
type Error struct {
	// Status is the HTTP status; 0 when no response arrived.
	Status int
	// Kind is the server's kind (invalidCall, unauthorized, quota,
	// overloaded, infrastructure).
	Kind string
	// Detail is the server's text, or the client's.
	Detail string
	// Retryable reports whether the same request may succeed later.
	Retryable bool
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration

	err error
}

// Error returns the detail with the status.
func (e *Error) Error() string {
	if e.Status == 0 {
		return e.Detail
	}
	return e.Detail + " (HTTP " + http.StatusText(e.Status) + ")"
}

// Unwrap returns the sentinels the error matches, and the transport's
// error when there is one.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Retryable {
		out = append(out, ErrRetryable)
		switch e.Kind {
		case effect.KindOverloaded.String():
			out = append(out, effect.ErrOverloaded)
		case effect.KindQuota.String():
			out = append(out, effect.ErrQuota)
		}
	} else {
		out = append(out, effect.ErrInvalidCall)
		switch e.Status {
		case http.StatusUnauthorized:
			out = append(out, ErrUnauthorized)
		case http.StatusNotFound:
			out = append(out, ErrNotFound)
		}
	}
	if e.err != nil {
		out = append(out, e.err)
	}
	return out
}
