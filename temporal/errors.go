package temporal

import (
	"errors"
	"strings"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	temporalsdk "go.temporal.io/sdk/temporal"
)

// TypePrefix starts the type of every application error the activity
// returns: "sandbank.<code>" for a typed failure (such as
// "sandbank.limitExceeded"), TypeInvalidCall, TypePayloadTooLarge and
// TypeInfrastructure.
const TypePrefix = "sandbank."

// The error types the activity returns besides "sandbank.<code>".
const (
	// TypeInvalidCall: the request is the caller's mistake (an address its
	// source does not hash to, an unknown engine or language, limits above
	// the worker's ceiling, an invalid shape). Not retryable.
	TypeInvalidCall = TypePrefix + "invalidCall"
	// TypePayloadTooLarge: the request or the result does not fit in the
	// payload limit (see Options.PayloadLimit). Not retryable.
	TypePayloadTooLarge = TypePrefix + "payloadTooLarge"
	// TypeInfrastructure: the engine or the worker failed. Retryable.
	TypeInfrastructure = TypePrefix + "infrastructure"
	// TypeQuota: the caller is at a quota of its own (effect.KindQuota).
	// Retryable later.
	TypeQuota = TypePrefix + "quota"
)

// TypeOf returns the application error type of a typed failure code,
// "sandbank.<code>", such as "sandbank.scriptError".
func TypeOf(code record.Code) string {
	return TypePrefix + code.String()
}

// answer is how the Temporal door answers a kind of error.
type answer struct {
	// typ is the application error's type; empty for a typed failure
	// ("sandbank.<code>") and for a context error (returned as is).
	typ          string
	nonRetryable bool
	asIs         bool
}

// answers is the Temporal door's table from the effect's kind of an error
// to its answer (a test proves it covers effect.Kinds()).
var answers = map[effect.Kind]answer{
	effect.KindFailure:     {nonRetryable: true},
	effect.KindInvalidCall: {typ: TypeInvalidCall, nonRetryable: true},
	// A closed effect is a worker shutting down: another worker may run
	// the same activity.
	effect.KindClosed:           {typ: TypeInfrastructure},
	effect.KindCanceled:         {asIs: true},
	effect.KindDeadlineExceeded: {asIs: true},
	effect.KindOverloaded:       {typ: TypeInfrastructure},
	effect.KindInfrastructure:   {typ: TypeInfrastructure},
	// The worker has no tenants; a caller's quota (effect.ErrQuota) is
	// retryable later, as at every door.
	effect.KindQuota: {typ: TypeQuota},
}

// activityError maps an error of the effect, and the run's record (nil
// when the run made none), to what the activity returns, looking its kind
// (effect.KindOf) up in answers. Every error it makes has two details,
// the typed failure and the record, either of them null (a record that
// would not fit in limit bytes is left out):
//
//   - a typed failure (*effect.Failure) becomes a non-retryable application
//     error of type "sandbank.<code>" whose message is the failure's text
//     (which names the limit kind): a retry would give the same answer;
//   - an invalid call becomes a non-retryable TypeInvalidCall;
//   - a context error is returned as is, so that the SDK reports a
//     cancelled activity as cancelled and a timed-out one as timed out;
//   - everything else (a closed effect, an overloaded one, a failed
//     engine) is infrastructure: a retryable TypeInfrastructure.
func activityError(err error, rec *effect.Record, limit int64) error {
	if err == nil {
		return nil
	}
	if rec != nil && checkPayload("record", rec, limit) != nil {
		rec = nil
	}
	a, ok := answers[effect.KindOf(err)]
	if !ok {
		a = answers[effect.KindInfrastructure]
	}
	var failure *effect.Failure
	switch {
	case a.asIs:
		return err
	case errors.As(err, &failure):
		return temporalsdk.NewNonRetryableApplicationError(failure.Error(), TypeOf(failure.Code), nil, failure, rec)
	case a.nonRetryable:
		return temporalsdk.NewNonRetryableApplicationError(err.Error(), a.typ, nil, nil, rec)
	default:
		return temporalsdk.NewApplicationError(err.Error(), a.typ, nil, rec) // details: no failure, the record
	}
}

// details decodes the two details of a sandbank application error in err's
// chain.
func details(err error) (*temporalsdk.ApplicationError, *effect.Failure, *effect.Record, bool) {
	var appErr *temporalsdk.ApplicationError
	if !errors.As(err, &appErr) || !strings.HasPrefix(appErr.Type(), TypePrefix) || !appErr.HasDetails() {
		return nil, nil, nil, false
	}
	var (
		f   *effect.Failure
		rec *effect.Record
	)
	if appErr.Details(&f, &rec) != nil {
		return nil, nil, nil, false
	}
	return appErr, f, rec, true
}

// FailureOf returns the typed failure an activity error carries, decoded
// from its details, as the worker's effect reported it. It reports false
// for any other error: an invalid call, infrastructure, a timeout, a
// cancellation. Use it in a workflow on the error of a run's future:
//
//	if f, ok := temporal.FailureOf(err); ok && f.Code == record.CodeLimitExceeded { … }
func FailureOf(err error) (*effect.Failure, bool) {
	appErr, f, _, ok := details(err)
	if !ok || f == nil || TypeOf(f.Code) != appErr.Type() {
		return nil, false
	}
	return f, true
}

// RecordOf returns the run record an activity error carries: for a typed
// failure, what the script logged before it failed, its stats and its
// receipt. It reports false when the error carries none (an invalid call,
// a run that never reached the engine, a record too large for a payload,
// an error that is not the activity's).
func RecordOf(err error) (*effect.Record, bool) {
	_, _, rec, ok := details(err)
	return rec, ok && rec != nil
}
