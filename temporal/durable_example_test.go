package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	sbtemporal "github.com/sandbank/sandbank/temporal"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// A script asks a person to approve a deletion: the worker's host
// function approve answers "not yet", the workflow waits for the signal
// sandbank.answer (holding no worker meanwhile) and resumes the run with
// the person's answer. Run here in the SDK's test environment on quickjs;
// with a server, the answer is client.SignalWorkflow(ctx, id, "",
// sbtemporal.AnswerSignal, sbtemporal.Answer{Value: ...}).
func ExampleDurableWorkflow() {
	var reg registry.Registry
	builtin.Register(&reg)
	acts, err := sbtemporal.NewActivities(&reg, &sbtemporal.Options{
		Engines: []string{"quickjs"},
		Host: effect.HostFuncs{"approve": func(context.Context, json.RawMessage) (any, error) {
			return nil, effect.Suspend("waiting for a person")
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer acts.Close()
	if err := acts.Warm(context.Background()); err != nil { // compile QuickJS before the first run
		log.Fatal(err)
	}
	req, err := sbtemporal.NewRequest([]byte(`const ok = await host.approve({delete: input.rows});
ok ? "deleted " + input.rows + " rows" : "kept them"`), map[string]int{"rows": 40})
	if err != nil {
		log.Fatal(err)
	}
	req.Engine = "quickjs"

	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute}) // a loaded machine
	env.SetTestTimeout(time.Minute)                                             // QuickJS compiles on its first run
	acts.Register(env)
	env.RegisterWorkflowWithOptions(sbtemporal.DurableWorkflow, workflow.RegisterOptions{Name: sbtemporal.DurableWorkflowName})
	env.RegisterDelayedCallback(func() { // a day later, the person answers
		v, err := env.QueryWorkflow(sbtemporal.PendingQuery)
		if err != nil {
			log.Fatal(err)
		}
		var p sbtemporal.Pending
		if err := v.Get(&p); err != nil {
			log.Fatal(err)
		}
		fmt.Println("waiting at", p.Call, string(p.Args))
		env.SignalWorkflow(sbtemporal.AnswerSignal, sbtemporal.Answer{Value: json.RawMessage(`true`)})
	}, 24*time.Hour)
	env.ExecuteWorkflow(sbtemporal.DurableWorkflowName, sbtemporal.DurableInput{Request: req})
	var res sbtemporal.DurableResult
	if err := env.GetWorkflowResult(&res); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Record.Value), "after", len(res.Chain), "suspension")
	// Output:
	// waiting at approve {"delete":40}
	// "deleted 40 rows" after 1 suspension
}
