package temporal

import (
	"errors"
	"strconv"
	"time"

	"github.com/sandbank/sandbank/effect"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// FanOutName is the name the example workflow FanOut is registered under.
const FanOutName = "sandbank.FanOut"

// ActivityOptions returns the activity options this package recommends
// for runs whose wall clock is at most wallClock and whose effect waits at
// most grace past it for a backend (effect.Options.BackendGrace; zero means
// effect.DefaultBackendGrace):
//
//   - StartToCloseTimeout: wallClock + grace + 30 s, so that the effect's
//     own deadline, which yields the typed limitExceeded (wallClock), always
//     comes first;
//   - HeartbeatTimeout: 10 s, so a run whose worker died is retried about
//     10 s later, not after the start-to-close timeout;
//   - RetryPolicy: 1 s initial interval, doubling, at most 1 min apart, at
//     most 5 attempts. Only infrastructure is retried: typed failures, invalid
//     requests and oversized payloads are non-retryable errors and end on
//     their first attempt whatever the policy says.
func ActivityOptions(wallClock, grace time.Duration) workflow.ActivityOptions {
	if wallClock <= 0 {
		wallClock = effect.DefaultWallClock
	}
	if grace <= 0 {
		grace = effect.DefaultBackendGrace
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout: wallClock + grace + 30*time.Second,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporalsdk.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    5,
		},
	}
}

// Execute schedules one run of req as the activity ActivityName with
// ctx's activity options (see workflow.WithActivityOptions and
// ActivityOptions). A request over DefaultPayloadLimit is refused at once,
// with a non-retryable TypePayloadTooLarge error on the future, instead of
// being handed to a server that would reject the workflow task.
func Execute(ctx workflow.Context, req Request) workflow.Future {
	if err := CheckRequest(req, DefaultPayloadLimit); err != nil {
		f, set := workflow.NewFuture(ctx)
		set.SetError(temporalsdk.NewNonRetryableApplicationError(err.Error(), TypePayloadTooLarge, nil))
		return f
	}
	return workflow.ExecuteActivity(ctx, ActivityName, req)
}

// Outcome is the end of one run in a fan-out: its record (effect.Record)
// when the run produced a value (Record.Value) or a typed failure
// (Record.Failure, attempted once), else Error, the error that ended it: an
// invalid request, or infrastructure after the retry policy gave up.
type Outcome struct {
	Record *effect.Record `json:"record,omitempty"`
	Error  string         `json:"error,omitempty"`
	// ErrorType is the application error type of Error, when it has one
	// (TypeInvalidCall, TypePayloadTooLarge, TypeInfrastructure).
	ErrorType string `json:"errorType,omitempty"`
}

// FanOutInput is the input of FanOut.
type FanOutInput struct {
	// Requests are the runs, one activity each.
	Requests []Request `json:"requests"`
	// WallClock and Grace choose the timeouts, as in ActivityOptions.
	WallClock time.Duration `json:"wallClock,omitempty"`
	Grace     time.Duration `json:"grace,omitempty"`
	// HeartbeatTimeout, when not zero, replaces ActivityOptions' 10 s.
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout,omitempty"`
	// RetryInitialInterval, when not zero, replaces ActivityOptions' 1 s.
	RetryInitialInterval time.Duration `json:"retryInitialInterval,omitempty"`
}

// RunID returns the activity ID FanOut gives its run number i (from 0):
// "run-<i>".
func RunID(i int) string { return "run-" + strconv.Itoa(i) }

// FanOut is an example workflow: it schedules one run per request, all at
// once, the run of in.Requests[i] with activity ID RunID(i), with ActivityOptions(in.WallClock, in.Grace) as in tunes them, and
// gathers every run's outcome, in the order of in.Requests. A typed failure
// is an outcome, not an error of the workflow: it is the script's answer.
func FanOut(ctx workflow.Context, in FanOutInput) ([]Outcome, error) {
	ao := ActivityOptions(in.WallClock, in.Grace)
	if in.HeartbeatTimeout > 0 {
		ao.HeartbeatTimeout = in.HeartbeatTimeout
	}
	if in.RetryInitialInterval > 0 {
		ao.RetryPolicy.InitialInterval = in.RetryInitialInterval
	}
	reqs := in.Requests
	futures := make([]workflow.Future, len(reqs))
	for i, req := range reqs {
		ao.ActivityID = RunID(i)
		futures[i] = Execute(workflow.WithActivityOptions(ctx, ao), req)
	}
	outcomes := make([]Outcome, len(reqs))
	for i, f := range futures {
		var rec effect.Record
		err := f.Get(ctx, &rec)
		switch failure, typed := FailureOf(err); {
		case err == nil:
			outcomes[i].Record = &rec
		case typed:
			outcomes[i].Record = &effect.Record{Failure: failure}
			if r, ok := RecordOf(err); ok {
				outcomes[i].Record = r
			}
		default:
			outcomes[i].Error = err.Error()
			var appErr *temporalsdk.ApplicationError
			if errors.As(err, &appErr) {
				outcomes[i].ErrorType = appErr.Type()
			}
		}
	}
	return outcomes, nil
}
