package temporal

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/stretchr/testify/require"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// fakeEngine is the engine name of the fake backend in the unit tests.
const fakeEngine = "fake"

// fakeBehavior answers by the script's text: "ok" echoes the input,
// "limit:<kind>" is stopped by that guard, "throw" throws a TypeError,
// "inputTooLarge" reports the input did not fit, "infra" is an
// infrastructure outcome, "flaky" is infrastructure on its first two calls
// and then echoes, "big" returns a string of 300 000 bytes, "wait" waits for
// its context and reports what ended it in waited.
func fakeBehavior(flaky *atomic.Int32, waited chan<- error) fakebackend.Behavior {
	return func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
		script := string(req.Script)
		switch {
		case script == "ok":
			return spi.OK(req.Input), nil
		case strings.HasPrefix(script, "limit:"):
			for k := spi.LimitKind(1); k.Valid(); k++ {
				if k.String() == strings.TrimPrefix(script, "limit:") {
					return spi.Limited(k), nil
				}
			}
		case script == "throw":
			return spi.Threw("TypeError", "boom"), nil
		case script == "hostloop":
			// Calls the host until the broker refuses (past MaxHostCalls
			// it also ends the run, which the effect then reports).
			for req.Host != nil {
				if _, err := req.Host.Call(ctx, "f", json.RawMessage("null")); err != nil {
					return spi.Threw("Error", err.Error()), nil
				}
			}
		case script == "inputTooLarge":
			return spi.InputTooLarge(), nil
		case script == "infra":
			return spi.Infrastructure("the engine broke"), nil
		case script == "flaky":
			if flaky.Add(1) <= 2 {
				return spi.Infrastructure("the engine broke, this time"), nil
			}
			return spi.OK(req.Input), nil
		case script == "big":
			b, _ := json.Marshal(strings.Repeat("x", 300_000))
			return spi.OK(b), nil
		case script == "sleep":
			select {
			case <-ctx.Done():
			case <-time.After(2500 * time.Millisecond):
			}
			return spi.OK(json.RawMessage("1")), nil
		case script == "wait":
			<-ctx.Done()
			waited <- ctx.Err()
			return spi.Infrastructure("stopped"), nil
		}
		return spi.Infrastructure("unknown test script"), nil
	}
}

// fakeRegistry returns a registry holding the fake engine, whose backend
// answers with b.
func fakeRegistry(b fakebackend.Behavior) *registry.Registry {
	var r registry.Registry
	caps := fakebackend.Capabilities()
	caps.HostCalls = true
	r.Register(registry.Entry{Engine: fakeEngine, Language: caps.Language, Capabilities: caps,
		Factory: func() (spi.Backend, error) { return fakebackend.New(caps, b), nil }})
	return &r
}

// fakeRequest returns a request to run source on the fake engine.
func fakeRequest(t *testing.T, source string, input any) Request {
	t.Helper()
	req, err := NewRequest([]byte(source), input)
	require.NoError(t, err)
	req.Engine = fakeEngine
	return req
}

// oneRunInput is the input of oneRun.
type oneRunInput struct {
	Request          Request
	HeartbeatTimeout time.Duration
	MaximumAttempts  int32
}

// oneRun is the workflow of the unit tests: one run, retried at most
// MaximumAttempts times, 1 ms apart.
func oneRun(ctx workflow.Context, in oneRunInput) (*effect.Record, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    in.HeartbeatTimeout,
		RetryPolicy: &temporalsdk.RetryPolicy{
			InitialInterval:    time.Millisecond,
			BackoffCoefficient: 1,
			MaximumAttempts:    in.MaximumAttempts,
		},
	})
	var res effect.Record
	if err := Execute(ctx, in.Request).Get(ctx, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
