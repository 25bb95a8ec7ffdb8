package temporal_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	sbtemporal "github.com/sandbank/sandbank/temporal"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// A worker: one effect per engine it runs, from the shipped engines, the
// activity and the example workflow registered, at most one run per core.
func ExampleNewWorker() {
	// Needs a Temporal server (temporal server start-dev): README's test
	// compiles this, it does not run it.
	c, err := client.Dial(client.Options{HostPort: client.DefaultHostPort})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var reg registry.Registry
	builtin.Register(&reg)
	w, err := sbtemporal.NewWorker(c, "sandbank", &reg, &sbtemporal.WorkerOptions{
		Options: sbtemporal.Options{Engines: []string{"quickjs", "starlark"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Activities().Close()
	if err := w.Activities().Warm(context.Background()); err != nil { // compile QuickJS before the first run
		log.Fatal(err)
	}
	if err := w.Run(worker.InterruptCh()); err != nil { // until SIGINT or SIGTERM
		log.Fatal(err)
	}
}

// A workflow of your own: one run, its typed failure read back.
func ExampleExecute() {
	myWorkflow := func(ctx workflow.Context, req sbtemporal.Request) (string, error) {
		ctx = workflow.WithActivityOptions(ctx, sbtemporal.ActivityOptions(req.Limits.WallClock, 0))
		var rec effect.Record
		err := sbtemporal.Execute(ctx, req).Get(ctx, &rec)
		if f, ok := sbtemporal.FailureOf(err); ok {
			// The script's own doing, attempted once: tell the model that
			// wrote it, do not retry.
			return "the script failed: " + f.Code.String(), nil
		}
		if err != nil {
			return "", err // infrastructure, after the retry policy gave up
		}
		return string(rec.Value), nil
	}
	_ = myWorkflow
}

// The example workflow FanOut, run here in the SDK's test environment on
// the starlark engine: three runs, gathered in order, typed failures
// included.
func ExampleFanOut() {
	var reg registry.Registry
	builtin.Register(&reg)
	acts, err := sbtemporal.NewActivities(&reg, &sbtemporal.Options{Engines: []string{"starlark"}})
	if err != nil {
		log.Fatal(err)
	}
	defer acts.Close()

	var reqs []sbtemporal.Request
	for _, script := range []string{
		"def main(input):\n    return input[\"a\"] + input[\"b\"]\n",
		"def main(input):\n    fail(\"no\")\n",
		"def main(input):\n    for i in range(100000000):\n        pass\n",
	} {
		req, err := sbtemporal.NewRequest([]byte(script), map[string]int{"a": 1, "b": 2})
		if err != nil {
			log.Fatal(err)
		}
		req.Language = "starlark"
		reqs = append(reqs, req)
	}

	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute}) // a loaded machine
	acts.Register(env)
	env.RegisterWorkflowWithOptions(sbtemporal.FanOut, workflow.RegisterOptions{Name: sbtemporal.FanOutName})
	env.ExecuteWorkflow(sbtemporal.FanOutName, sbtemporal.FanOutInput{Requests: reqs})
	var outcomes []sbtemporal.Outcome
	if err := env.GetWorkflowResult(&outcomes); err != nil {
		log.Fatal(err)
	}
	for _, o := range outcomes {
		switch {
		case o.Record.Failure != nil:
			fmt.Println("failure:", o.Record.Failure, o.Record.Failure.Code == record.CodeLimitExceeded)
		default:
			fmt.Println("value:", string(o.Record.Value), "on", o.Record.Receipt.Engine)
		}
	}
	// Output:
	// value: 3 on starlark
	// failure: effect: scriptError: fail: no false
	// failure: effect: limitExceeded (cpu) true
}
