package temporal

import (
	"runtime"

	"github.com/sandbank/sandbank/registry"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// WorkerOptions configure NewWorker. The zero value (or a nil
// *WorkerOptions) means defaults.
type WorkerOptions struct {
	// Options configure the activities (engines, effect options, payload
	// limit, heartbeats).
	Options
	// Worker is handed to worker.New. Its zero
	// MaxConcurrentActivityExecutionSize means runtime.GOMAXPROCS(0): one
	// run per core, since a run is CPU-bound.
	Worker worker.Options
}

// Worker is a Temporal worker that runs scripts: the activities
// ActivityName, DurableRunName and DurableResumeName and the workflows
// FanOutName and DurableWorkflowName, registered on one task queue.
type Worker struct {
	worker.Worker
	activities *Activities
}

// NewWorker returns a worker polling taskQueue through c, with one effect
// per engine of reg (or per engine named in opts.Engines; see Options), the
// activities (Activities.Register), the example workflow FanOut and the
// workflow DurableWorkflow registered. Start it with Start or Run; Stop
// stops it and closes the effects.
func NewWorker(c client.Client, taskQueue string, reg *registry.Registry, opts *WorkerOptions) (*Worker, error) {
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	acts, err := NewActivities(reg, &o.Options)
	if err != nil {
		return nil, err
	}
	wo := o.Worker
	if wo.MaxConcurrentActivityExecutionSize == 0 {
		wo.MaxConcurrentActivityExecutionSize = runtime.GOMAXPROCS(0)
	}
	w := worker.New(c, taskQueue, wo)
	acts.Register(w)
	w.RegisterWorkflowWithOptions(FanOut, workflow.RegisterOptions{Name: FanOutName})
	w.RegisterWorkflowWithOptions(DurableWorkflow, workflow.RegisterOptions{Name: DurableWorkflowName})
	return &Worker{Worker: w, activities: acts}, nil
}

// Activities returns the worker's activities.
func (w *Worker) Activities() *Activities { return w.activities }

// Stop stops the worker (see worker.Worker.Stop: runs in flight are given
// worker.Options.WorkerStopTimeout, then cancelled) and closes the effects.
func (w *Worker) Stop() {
	w.Worker.Stop()
	_ = w.activities.Close()
}
