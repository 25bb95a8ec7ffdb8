package effect

import (
	"context"
	"errors"
	"fmt"
)

// Kind is the one classification of an error, as every door needs it:
// each door (HTTP, MCP, Temporal, the command line) keeps a table from
// Kind to its own code and never re-derives what an error is. It is a
// closed set: the zero value is no kind (what KindOf returns for nil),
// values are never renumbered, and Kinds lists them all.
//
// The kinds fall into the three kinds of error of docs/design.md:
//
//   - the script's typed failure: KindFailure;
//   - the caller's invalid request: KindInvalidCall and KindClosed;
//   - infrastructure: KindOverloaded, KindDeadlineExceeded,
//     KindInfrastructure and KindQuota (retryable);
//
// and KindCanceled is the caller giving up, which is none of them and not
// retryable.
type Kind int

const (
	// KindFailure: the script's typed failure, a *Failure. Not
	// retryable: the same script and input fail the same way.
	KindFailure Kind = iota + 1
	// KindInvalidCall: the caller's invalid request, matching
	// ErrInvalidCall (and not ErrClosed). Not retryable: fix the call.
	KindInvalidCall
	// KindClosed: a call after Close, matching ErrClosed (which matches
	// ErrInvalidCall too). Not retryable on the same Effect; a door
	// whose Effect is closed is shutting down.
	KindClosed
	// KindCanceled: the caller gave up, context.Canceled. Not retryable.
	KindCanceled
	// KindDeadlineExceeded: the caller's own deadline passed,
	// context.DeadlineExceeded. Retryable: more time may help.
	KindDeadlineExceeded
	// KindOverloaded: the call was refused for want of capacity,
	// matching ErrOverloaded. Retryable later.
	KindOverloaded
	// KindInfrastructure: anything else: a backend, a store or a door
	// that failed. Retryable.
	KindInfrastructure
	// KindQuota: the caller is at a quota of its own, matching ErrQuota
	// (a tenant's rate, its runs in flight). Retryable later: the same
	// call succeeds once the caller's runs end or its rate allows, on
	// the same server.
	KindQuota
)

var kindNames = [...]string{
	KindFailure:          "failure",
	KindInvalidCall:      "invalidCall",
	KindClosed:           "closed",
	KindCanceled:         "canceled",
	KindDeadlineExceeded: "deadlineExceeded",
	KindOverloaded:       "overloaded",
	KindInfrastructure:   "infrastructure",
	KindQuota:            "quota",
}

// Kinds returns every valid Kind, in order, in a new slice: a door's test
// iterates it to prove that its table covers every kind.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindNames)-1)
	for k := KindFailure; k.Valid(); k++ {
		out = append(out, k)
	}
	return out
}

// Valid reports whether k is one of the declared kinds.
func (k Kind) Valid() bool { return k >= KindFailure && k <= KindQuota }

// String returns the kind's name, such as "invalidCall", or "Kind(n)"
// for a value outside the set (the zero value included).
func (k Kind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Retryable reports whether an error of kind k is worth retrying: true
// for KindDeadlineExceeded, KindOverloaded, KindInfrastructure and
// KindQuota, false for every other kind and for a value outside the set.
func (k Kind) Retryable() bool {
	switch k {
	case KindDeadlineExceeded, KindOverloaded, KindInfrastructure, KindQuota:
		return true
	default:
		return false
	}
}

// KindOf returns the kind of err: the zero Kind (no kind, not Valid) for
// nil; otherwise the first that matches of KindFailure (a *Failure in the
// chain), KindClosed (ErrClosed), KindInvalidCall (ErrInvalidCall),
// KindCanceled (context.Canceled), KindDeadlineExceeded
// (context.DeadlineExceeded), KindQuota (ErrQuota) and KindOverloaded
// (ErrOverloaded), and
// KindInfrastructure for everything else. It only inspects err: a context
// error keeps its identity, errors.Is(err, context.Canceled) still holds.
func KindOf(err error) Kind {
	var f *Failure
	switch {
	case err == nil:
		return 0
	case errors.As(err, &f):
		return KindFailure
	case errors.Is(err, ErrClosed):
		return KindClosed
	case errors.Is(err, ErrInvalidCall):
		return KindInvalidCall
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return KindDeadlineExceeded
	case errors.Is(err, ErrQuota):
		return KindQuota
	case errors.Is(err, ErrOverloaded):
		return KindOverloaded
	default:
		return KindInfrastructure
	}
}
