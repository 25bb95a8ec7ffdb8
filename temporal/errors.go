package temporal

import (
	"context"
	"errors"
	"strings"

	"github.com/sandbank/sandbank/effect"
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
)

// TypeOf returns the application error type of a typed failure code,
// "sandbank.<code>", such as "sandbank.scriptError".
func TypeOf(code effect.Code) string {
	return TypePrefix + code.String()
}

// activityError maps an error of the effect to what the activity returns:
//
//   - a typed failure (*effect.Failure) becomes a non-retryable application
//     error of type "sandbank.<code>" whose message is the failure's text
//     (which names the limit kind) and whose one detail is the failure
//     (its JSON form, code and kind included): a retry would give the same
//     answer;
//   - an invalid call becomes a non-retryable TypeInvalidCall;
//   - a context error is returned as is, so that the SDK reports a
//     cancelled activity as cancelled and a timed-out one as timed out;
//   - everything else is infrastructure: a retryable TypeInfrastructure.
func activityError(err error) error {
	var failure *effect.Failure
	switch {
	case err == nil:
		return nil
	case errors.As(err, &failure):
		return temporalsdk.NewNonRetryableApplicationError(failure.Error(), TypeOf(failure.Code), nil, failure)
	case errors.Is(err, effect.ErrInvalidCall):
		return temporalsdk.NewNonRetryableApplicationError(err.Error(), TypeInvalidCall, nil)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return temporalsdk.NewApplicationError(err.Error(), TypeInfrastructure)
	}
}

// FailureOf returns the typed failure an activity error carries, decoded
// from its details, as the worker's effect reported it. It reports false
// for any other error: an invalid call, infrastructure, a timeout, a
// cancellation. Use it in a workflow on the error of a run's future:
//
//	if f, ok := temporal.FailureOf(err); ok && f.Code == effect.CodeLimitExceeded { … }
func FailureOf(err error) (*effect.Failure, bool) {
	var appErr *temporalsdk.ApplicationError
	if !errors.As(err, &appErr) || !strings.HasPrefix(appErr.Type(), TypePrefix) || !appErr.HasDetails() {
		return nil, false
	}
	var w failureWire
	if appErr.Details(&w) != nil {
		return nil, false
	}
	f, ok := w.failure()
	if !ok || TypeOf(f.Code) != appErr.Type() {
		return nil, false
	}
	return f, true
}
