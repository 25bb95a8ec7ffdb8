// Package temporal runs Sandbank scripts as Temporal activities: a script
// run has a deadline, may be retried when the infrastructure failed, and is
// never retried when the script itself failed, since a typed failure is
// deterministic.
//
// It is a module of its own (github.com/sandbank/sandbank/temporal), so
// that the Temporal SDK never enters the dependency graph of programs that
// use Sandbank without Temporal. It needs Go 1.26, as go.temporal.io/sdk
// v1.51.0 does; the core module supports Go 1.25.
//
// A worker holds a pool (package pool) of the engines of a registry
// (package builtin registers the shipped engines): one effect per engine,
// built on its first run or by Activities.Warm, chosen for a request as
// every door of Sandbank chooses (pool.Pool.Resolve). It registers
// the activity ActivityName; NewWorker does both and also registers the
// example workflow FanOut. A workflow schedules a run with Execute (or
// workflow.ExecuteActivity with ActivityName and a Request), with the
// options ActivityOptions recommends.
//
// # The activity
//
// A Request names its script by content address and carries its bytes, so
// workers need no shared store; the worker's effect checks that the bytes
// hash to the address before anything runs. It also names the engine (or
// a language), the input as JSON text, the limits and an optional shape.
// The activity's result is the run's record, an *effect.Record: the value
// as canonical JSON, what the script logged, the run's stats and its
// receipt (script, input and output digests, engine, limits), signed by
// the worker's key when Options.Signer is set. A typed failure's error
// carries the record too (RecordOf), logs and signature included.
//
// # Errors and retries
//
// The activity's errors are Temporal application errors, each looked up
// by its kind (effect.KindOf) in one table:
//
//   - a typed failure (*effect.Failure) is non-retryable, of type
//     "sandbank.<code>" (such as "sandbank.limitExceeded"), its message the
//     failure's text (which names the limit kind), its details the failure
//     (code and limit kind included) and the run record: FailureOf and
//     RecordOf read them back in a workflow;
//   - an invalid request (a source that does not hash to its address, an
//     engine the worker does not run, limits above its ceiling) is
//     non-retryable TypeInvalidCall;
//   - a request or a result over the payload limit is non-retryable
//     TypePayloadTooLarge (see PayloadError; there is no claim-check store);
//   - anything else is infrastructure, retryable TypeInfrastructure, retried
//     as the activity's retry policy says: a failed engine, an overloaded
//     one, and an effect closed by a worker shutting down (another worker
//     may run it);
//   - a cancelled activity cancels the run, and a run whose context ends
//     returns the context's error, as the SDK expects.
//
// While a script runs, the activity heartbeats (when its activity has a
// heartbeat timeout), so a run whose worker died is retried on another
// worker once the heartbeat timeout passes, and a cancellation reaches the
// run.
//
// # Durable runs
//
// DurableWorkflow (registered by NewWorker as DurableWorkflowName) runs a
// request durably: a host function of Options.Host may answer
// effect.Suspend, and the workflow then waits for the signal AnswerSignal
// without holding a worker, and resumes the run by replay (package
// durable) in an activity on any worker, until it ends. The continuation
// travels in the workflow's history up to MaxInlineContinuation, else in
// Options.Continuations by content address; a resumption checks it
// against Options.Keys (default: the Signer's key). The result is the last
// record and the chain of suspended receipts; PendingQuery says what a run
// waits for.
//
// # Sizing workers
//
// A run is CPU-bound: a worker runs at most GOMAXPROCS runs at once by
// default (WorkerOptions.Worker.MaxConcurrentActivityExecutionSize), with
// one effect per engine, shared by all of them. docs/temporal.md in the
// repository says more: the retry policy, the timeouts, the heartbeat,
// and what is and is not retried.
package temporal
