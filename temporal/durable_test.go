package temporal

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
)

// approvals is the durable fake's script: it asks the host to double its
// input (a call that answers), then for two approvals, each given the
// answer before it, and returns the three answers.
const approvals = "approvals"

// approvalLoop is the durable fake's script that asks for approvals for
// ever.
const approvalLoop = "approval loop"

// durableBehavior runs approvals on the fake engine: a deterministic
// script, as far as the effect can tell, whose every answer comes from the
// host.
func durableBehavior(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if string(req.Script) == approvalLoop {
		for {
			if _, err := req.Host.Call(ctx, "approve", json.RawMessage(`null`)); err != nil {
				return spi.Threw("Error", err.Error()), nil
			}
		}
	}
	if string(req.Script) != approvals {
		return spi.Infrastructure("unknown test script"), nil
	}
	a, err := req.Host.Call(ctx, "double", req.Input)
	if err != nil {
		return spi.Threw("Error", err.Error()), nil
	}
	b, err := req.Host.Call(ctx, "approve", a)
	if err != nil {
		return spi.Threw("Error", err.Error()), nil
	}
	c, err := req.Host.Call(ctx, "approve", b)
	if err != nil {
		return spi.Threw("Error", err.Error()), nil
	}
	return spi.OK(json.RawMessage(`[` + string(a) + `,` + string(b) + `,` + string(c) + `]`)), nil
}

// durableRegistry holds the fake engine declaring Deterministic, running
// durableBehavior.
func durableRegistry() *registry.Registry { return durableRegistryFiles(false) }

// durableRegistryFiles is durableRegistry, its engine declaring Files
// when files is set.
func durableRegistryFiles(files bool) *registry.Registry {
	var r registry.Registry
	caps := fakebackend.Capabilities()
	caps.HostCalls, caps.Deterministic, caps.Files = true, true, files
	r.Register(registry.Entry{Engine: fakeEngine, Language: caps.Language, Capabilities: caps,
		Factory: func() (spi.Backend, error) { return fakebackend.New(caps, durableBehavior), nil }})
	return &r
}

// durableHost is the worker's host functions: double doubles a number and
// counts its calls; approve answers "not yet".
func durableHost(doubles *atomic.Int32) effect.HostFuncs {
	return effect.HostFuncs{
		"double": func(_ context.Context, args json.RawMessage) (any, error) {
			doubles.Add(1)
			var n int
			if err := json.Unmarshal(args, &n); err != nil {
				return nil, err
			}
			return 2 * n, nil
		},
		"approve": func(context.Context, json.RawMessage) (any, error) {
			return nil, effect.Suspend("a person must approve")
		},
	}
}

// durableActs returns activities over the durable fake with opts, its
// Host set to durableHost.
func durableActs(t *testing.T, opts Options, doubles *atomic.Int32) *Activities {
	t.Helper()
	opts.Host = durableHost(doubles)
	acts, err := NewActivities(durableRegistry(), &opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = acts.Close() })
	return acts
}

// durableEnv is a test environment for DurableWorkflow on acts, which
// counts the activities started and completed.
func durableEnv(acts *Activities) (*testsuite.TestWorkflowEnvironment, *atomic.Int32, *atomic.Int32) {
	env := newEnv()
	env.SetTestTimeout(time.Minute)
	acts.Register(env)
	env.RegisterWorkflow(DurableWorkflow)
	var started, completed atomic.Int32
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { started.Add(1) })
	env.SetOnActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) { completed.Add(1) })
	return env, &started, &completed
}

// signer returns a new signing key and the key set that trusts it.
func signer(t *testing.T) (*receipt.Ed25519Signer, *receipt.KeySet) {
	t.Helper()
	s, err := receipt.GenerateEd25519Signer()
	require.NoError(t, err)
	keys, err := receipt.NewKeySet(receipt.TrustedKey{PublicKey: s.PublicKey()})
	require.NoError(t, err)
	return s, keys
}

// TestDurableWorkflowWaitsForAnswers: the run suspends twice; while it
// waits no activity is running and the query names the call it waits at;
// an answer to another suspension is dropped; each signal resumes it, the
// logged call answered from the log (double runs once in all); the result
// is the value, and the final record and the chain of receipts verify
// against the worker's key.
func TestDurableWorkflowWaitsForAnswers(t *testing.T) {
	s, keys := signer(t)
	var doubles atomic.Int32
	acts := durableActs(t, Options{Signer: s}, &doubles)
	env, started, completed := durableEnv(acts)
	waits := 0
	answer := func(n int, value string) func() {
		return func() {
			waits++
			assert.Equal(t, started.Load(), completed.Load(), "an activity runs while the workflow waits")
			res, err := env.QueryWorkflow(PendingQuery)
			require.NoError(t, err)
			var p Pending
			require.NoError(t, res.Get(&p))
			assert.True(t, p.Waiting)
			assert.Equal(t, n, p.Suspensions)
			assert.Equal(t, "approve", p.Call)
			assert.Equal(t, "a person must approve", p.Reason)
			if n == 1 {
				assert.JSONEq(t, `42`, string(p.Args))
				// An answer to the next suspension is not this one's.
				env.SignalWorkflow(AnswerSignal, Answer{Suspension: 2, Value: json.RawMessage(`"early"`)})
			}
			env.SignalWorkflow(AnswerSignal, Answer{Suspension: n, Value: json.RawMessage(value)})
		}
	}
	env.RegisterDelayedCallback(answer(1, `"yes"`), time.Hour)
	env.RegisterDelayedCallback(answer(2, `"sure"`), 2*time.Hour)
	req := fakeRequestOf(t, approvals, 21)
	env.ExecuteWorkflow(DurableWorkflow, DurableInput{Request: req})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res DurableResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, 2, waits)
	require.NotNil(t, res.Record)
	assert.JSONEq(t, `[42,"yes","sure"]`, string(res.Record.Value))
	assert.Equal(t, int32(1), doubles.Load(), "a logged call is answered from the log")
	assert.Equal(t, int32(3), started.Load(), "one run, two resumptions")
	verifyChain(t, res, req, keys)
}

// verifyChain checks a durable result: the final record verifies with
// its signature, every suspended segment's receipt verifies, and each
// receipt names the one before it.
func verifyChain(t *testing.T, res DurableResult, req Request, keys *receipt.KeySet) {
	t.Helper()
	opts := []receipt.VerifyOption{receipt.WithKeys(keys), receipt.RequireSignature()}
	require.NoError(t, receipt.Verify(res.Record, req.Source, req.Input, opts...))
	prev := ""
	for i, r := range res.Chain {
		require.NoError(t, receipt.VerifyReceipt(r, req.Source, req.Input, opts...), "segment %d", i)
		assert.Equal(t, "suspended", r.Outcome, "segment %d", i)
		assert.Equal(t, i, r.Suspensions, "segment %d", i)
		assert.Equal(t, prev, r.Previous, "segment %d", i)
		d, err := r.Digest()
		require.NoError(t, err)
		prev = d
	}
	assert.Equal(t, prev, res.Record.Receipt.Previous, "the final receipt names the last suspended one")
	assert.Equal(t, len(res.Chain), res.Record.Receipt.Suspensions)
}

// fakeRequestOf is a request of the durable fake.
func fakeRequestOf(t *testing.T, script string, input any) Request {
	t.Helper()
	req, err := NewRequest([]byte(script), input)
	require.NoError(t, err)
	req.Engine = fakeEngine
	return req
}

// runDurable runs DurableWorkflow on acts for req, answering every
// suspension with true, and returns its result or error.
func runDurable(t *testing.T, acts *Activities, req Request) (*DurableResult, error) {
	t.Helper()
	env, _, _ := durableEnv(acts)
	for i := 1; i <= durable.MaxSuspensions+2; i++ {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(AnswerSignal, Answer{Value: json.RawMessage(`true`)}) }, time.Duration(i)*time.Hour)
	}
	env.ExecuteWorkflow(DurableWorkflow, DurableInput{Request: req})
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var res DurableResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return &res, nil
}

// TestLargeContinuationIsStored: a continuation over MaxInlineContinuation
// (its input is large) goes to Options.Continuations by content address
// and comes back from it; without a store, the run fails
// TypePayloadTooLarge, naming the continuation.
func TestLargeContinuationIsStored(t *testing.T) {
	s, keys := signer(t)
	req := fakeRequestOf(t, approvals, 21)
	// The continuation holds the input: make it large.
	req.Input = json.RawMessage(`"` + strings.Repeat("x", MaxInlineContinuation) + `"`)
	store, err := storage.NewMemoryStore(nil)
	require.NoError(t, err)
	var doubles atomic.Int32
	big := func(_ context.Context, args json.RawMessage) (any, error) { doubles.Add(1); return len(args), nil }
	acts := durableActs(t, Options{Signer: s, Continuations: store}, &doubles)
	acts.host["double"] = big
	res, err := runDurable(t, acts, req)
	require.NoError(t, err)
	assert.JSONEq(t, `[`+strconv.Itoa(MaxInlineContinuation+2)+`,true,true]`, string(res.Record.Value))
	entries, _ := store.Usage()
	assert.Equal(t, 2, entries, "each suspension's continuation was stored")
	verifyChain(t, *res, req, keys)

	plain := durableActs(t, Options{Signer: s}, &doubles)
	plain.host["double"] = big
	_, err = runDurable(t, plain, req)
	require.Error(t, err)
	assert.Equal(t, TypePayloadTooLarge, appError(t, err).Type())
	assert.Contains(t, err.Error(), "continuation")
}

// TestResumeNeedsATrustedKey: a worker with a Signer resumes only
// continuations its key (or Options.Keys) signed: a suspension signed by
// another worker's key is TypeInvalidCall, and resumes once that key is
// trusted.
func TestResumeNeedsATrustedKey(t *testing.T) {
	a, aKeys := signer(t)
	b, _ := signer(t)
	var doubles atomic.Int32
	step, err := activityOf(durableActs(t, Options{Signer: a}, &doubles), DurableRunName, fakeRequestOf(t, approvals, 21))
	require.NoError(t, err)
	var st DurableStep
	require.NoError(t, step.Get(&st))
	require.NotNil(t, st.Suspension)
	resume := ResumeRequest{Suspension: *st.Suspension, Answer: json.RawMessage(`true`)}

	for _, c := range []struct {
		name string
		opts Options
		ok   bool
	}{
		{"another worker's key", Options{Signer: b}, false},
		{"that key trusted", Options{Signer: b, Keys: aKeys}, true},
		{"the same key", Options{Signer: a}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := activityOf(durableActs(t, c.opts, &doubles), DurableResumeName, resume)
			if c.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, TypeInvalidCall, appError(t, err).Type())
			assert.Contains(t, err.Error(), "signature")
		})
	}

	tampered := resume
	tampered.Suspension.Continuation = []byte(strings.Replace(string(resume.Suspension.Continuation), `"input":21`, `"input":22`, 1))
	require.NotEqual(t, resume.Suspension.Continuation, tampered.Suspension.Continuation)
	_, err = activityOf(durableActs(t, Options{}, &doubles), DurableResumeName, tampered)
	require.Error(t, err)
	assert.Equal(t, TypeInvalidCall, appError(t, err).Type(), "a tampered continuation, even with no key to check")
}

// activityOf runs the activity name of acts with input in a test
// activity environment.
func activityOf(acts *Activities, name string, input any) (converter.EncodedValue, error) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	acts.Register(env)
	return env.ExecuteActivity(name, input)
}

// TestDurableNeedsDeterminism: an engine that does not declare
// Deterministic is refused at once, TypeInvalidCall, never suspended.
func TestDurableNeedsDeterminism(t *testing.T) {
	acts := newActs(t, &Options{Host: durableHost(new(atomic.Int32))}, nil)
	_, err := runDurable(t, acts, fakeRequest(t, "ok", 1))
	require.Error(t, err)
	assert.Equal(t, TypeInvalidCall, appError(t, err).Type())
}

// TestRunGivesTheHostFunctions: the activity ActivityName gives the
// script the worker's host functions too; a Suspend there, outside a
// durable run, is TypeInvalidCall, not a suspension.
func TestRunGivesTheHostFunctions(t *testing.T) {
	var doubles atomic.Int32
	_, err := activityOf(durableActs(t, Options{}, &doubles), ActivityName, fakeRequestOf(t, approvals, 21))
	require.Error(t, err)
	assert.Equal(t, TypeInvalidCall, appError(t, err).Type())
	assert.Equal(t, int32(1), doubles.Load(), "the script called the worker's host function")
}

// TestSuspensionsBoundedInTheWorkflow: a script that asks for approval
// for ever is answered durable.MaxSuspensions times, then ends
// limitExceeded (suspensions), its result holding every suspended
// receipt, chained.
func TestSuspensionsBoundedInTheWorkflow(t *testing.T) {
	s, keys := signer(t)
	req := fakeRequestOf(t, approvalLoop, nil)
	res, err := runDurable(t, durableActs(t, Options{Signer: s}, new(atomic.Int32)), req)
	require.NoError(t, err)
	require.NotNil(t, res.Record.Failure)
	assert.Equal(t, record.CodeLimitExceeded, res.Record.Failure.Code)
	assert.Equal(t, record.LimitSuspensions, res.Record.Failure.Kind)
	assert.Len(t, res.Chain, durable.MaxSuspensions)
	verifyChain(t, *res, req, keys)
}

// TestDurableRunKeepsItsInputFiles: a durable run's input files reach
// its first segment and every resumption (a continuation names them by
// digest only, and the effect refuses a resumption without them), inline
// and stored.
func TestDurableRunKeepsItsInputFiles(t *testing.T) {
	store := new(storage.MemoryStore)
	stored := []byte("region,units\nsouth,5\n")
	addr, err := store.Put(stored)
	require.NoError(t, err)
	var doubles atomic.Int32
	acts, err := NewActivities(durableRegistryFiles(true), &Options{Host: durableHost(&doubles), Scripts: store})
	require.NoError(t, err)
	t.Cleanup(func() { _ = acts.Close() })
	req := fakeRequestOf(t, approvals, 21)
	req.Files = []spi.File{{Name: "a.csv", Data: []byte("region,units\nnorth,3\n")}}
	req.StoredFiles = []record.FileRef{{Name: "b.csv", Digest: addr, Bytes: int64(len(stored))}}
	res, err := runDurable(t, acts, req)
	require.NoError(t, err)
	require.NotNil(t, res.Record)
	names := []string{}
	for _, f := range res.Record.Receipt.InputFiles {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"a.csv", "b.csv"}, names, "the last segment ran with the run's input files")
	require.NotEmpty(t, res.Chain)
	assert.Len(t, res.Chain[0].InputFiles, 2, "the first segment ran with them too")
}
