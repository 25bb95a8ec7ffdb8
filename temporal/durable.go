package temporal

// This file is the Temporal door of durable runs (docs/design.md, "Durable
// runs"; docs/temporal.md, "Durable runs"): the workflow DurableWorkflow,
// its two activities and the signal that answers a suspended run.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"go.temporal.io/sdk/activity"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The names durable runs are registered and answered under.
const (
	// DurableWorkflowName is the name DurableWorkflow is registered under.
	DurableWorkflowName = "sandbank.Durable"
	// DurableRunName is the activity that runs a Request durably
	// (Activities.DurableRun).
	DurableRunName = "sandbank.DurableRun"
	// DurableResumeName is the activity that resumes a suspended run
	// (Activities.DurableResume).
	DurableResumeName = "sandbank.DurableResume"
	// AnswerSignal is the signal that answers a suspended run: its payload
	// is an Answer.
	AnswerSignal = "sandbank.answer"
	// PendingQuery is the query DurableWorkflow answers with a Pending:
	// what the run waits for.
	PendingQuery = "sandbank.pending"
)

// MaxInlineContinuation bounds an encoded continuation that travels in the
// workflow's history (in a DurableStep, then in a ResumeRequest): 128
// KiB, so that a run's MaxSuspensions (64) suspensions add at most about
// 22 MiB to its history (each twice, in base64), under Temporal's default
// history bound of 50 MiB. A
// larger one goes to Options.Continuations, by content address.
const MaxInlineContinuation = 128 << 10

// DurableInput is the input of DurableWorkflow.
type DurableInput struct {
	// Request is the run. Its engine must declare Deterministic (today
	// quickjs and its variants), else the run is refused
	// (TypeInvalidCall).
	Request Request `json:"request"`
	// Grace chooses the activities' timeouts with the request's wall
	// clock, as in ActivityOptions.
	Grace time.Duration `json:"grace,omitempty"`
}

// Suspension is a durable run suspended at a host call: what it waits for,
// the suspended segment's receipt, and its continuation, inline or stored.
type Suspension struct {
	// Call is the host function the run waits at; Args the arguments the
	// script passed it (JSON text); Reason the host function's reason
	// (effect.Suspend).
	Call   string          `json:"call"`
	Args   json.RawMessage `json:"args"`
	Reason string          `json:"reason,omitempty"`
	// Receipt is the suspended segment's receipt (signed by the worker's
	// Signer, when set); the next segment's receipt names its digest
	// (record.Receipt.Previous).
	Receipt record.Receipt `json:"receipt"`
	// Continuation is the encoded continuation (durable.Continuation.Encode)
	// when it is at most MaxInlineContinuation bytes; else Stored is its
	// address in the workers' Options.Continuations. Exactly one is set.
	Continuation []byte         `json:"continuation,omitempty"`
	Stored       record.Address `json:"stored,omitempty"`
}

// DurableStep is the result of the activities DurableRunName and
// DurableResumeName: the run's record when it ended with a value, or its
// suspension. A typed failure is the activity's error, as for
// ActivityName (FailureOf, RecordOf).
type DurableStep struct {
	Record     *effect.Record `json:"record,omitempty"`
	Suspension *Suspension    `json:"suspension,omitempty"`
}

// ResumeRequest is the input of the activity DurableResumeName.
type ResumeRequest struct {
	// Suspension is the run to resume, as a DurableStep gave it.
	Suspension Suspension `json:"suspension"`
	// Answer is the pending call's answer, JSON text.
	Answer json.RawMessage `json:"answer"`
	// Shape is the run's shape (Request.Shape): a continuation does not
	// carry it.
	Shape json.RawMessage `json:"shape,omitempty"`
	// Files and StoredFiles are the run's input files (Request.Files and
	// StoredFiles): a continuation names them by digest only, and a
	// resumption must be given the same ones (the effect checks).
	Files       []spi.File       `json:"files,omitempty"`
	StoredFiles []record.FileRef `json:"storedFiles,omitempty"`
}

// Answer is the payload of AnswerSignal.
type Answer struct {
	// Suspension is the suspension it answers, counted from 1
	// (Pending.Suspensions); zero answers whichever the run waits at, or
	// will wait at next. An answer to another suspension is dropped.
	Suspension int `json:"suspension,omitempty"`
	// Value is the answer the pending host call returns to the script,
	// JSON text (at most the effect's MaxHostResultBytes, else the run
	// fails TypeInvalidCall).
	Value json.RawMessage `json:"value"`
}

// Pending is what DurableWorkflow answers to PendingQuery.
type Pending struct {
	// Waiting says the run waits for an answer (AnswerSignal); else a
	// segment is running (or none has run yet).
	Waiting bool `json:"waiting"`
	// Suspensions counts the run's suspensions so far; while Waiting, the
	// answer to number Suspensions is awaited.
	Suspensions int `json:"suspensions"`
	// Call, Args and Reason are the suspension's, while Waiting.
	Call   string          `json:"call,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

// DurableResult is the end of DurableWorkflow.
type DurableResult struct {
	// Record is the last segment's record: the value, or the typed failure
	// (replayDiverged, limitExceeded (suspensions) and the rest); its
	// host calls and its receipt's hostLog cover every segment.
	Record *effect.Record `json:"record"`
	// Chain holds the receipt of every suspended segment, in order: each
	// one's digest is the Previous of the next, the last one's is
	// Record.Receipt.Previous.
	Chain []record.Receipt `json:"chain,omitempty"`
}

// DurableWorkflow runs in.Request durably: the activity DurableRunName
// runs it; when a host function (Options.Host) answers effect.Suspend, the
// workflow keeps the continuation (in its history, or its address in the
// workers' Options.Continuations) and waits for the signal AnswerSignal —
// a workflow waiting holds no activity slot, no process and no engine —,
// then the activity DurableResumeName resumes it with the answer by replay
// (durable.Resume) on whichever worker takes it, until the run ends. A
// value or a typed failure is the result; an invalid request (an engine
// that does not declare Deterministic, a continuation that does not
// verify, an answer that is not JSON text or too large) or infrastructure
// the retry policy gave up on is the workflow's error. A run suspends at
// most durable.MaxSuspensions times: the next suspension ends it
// limitExceeded (suspensions). PendingQuery says what it waits for.
func DurableWorkflow(ctx workflow.Context, in DurableInput) (*DurableResult, error) {
	ctx = workflow.WithActivityOptions(ctx, ActivityOptions(in.Request.Limits.WallClock, in.Grace))
	var pending Pending
	if err := workflow.SetQueryHandler(ctx, PendingQuery, func() (Pending, error) { return pending, nil }); err != nil {
		return nil, err
	}
	if err := CheckRequest(in.Request, DefaultPayloadLimit); err != nil {
		return nil, temporalsdk.NewNonRetryableApplicationError(err.Error(), TypePayloadTooLarge, nil)
	}
	answers := workflow.GetSignalChannel(ctx, AnswerSignal)
	var (
		step  DurableStep
		chain []record.Receipt
	)
	err := workflow.ExecuteActivity(ctx, DurableRunName, in.Request).Get(ctx, &step)
	for {
		switch failure, typed := FailureOf(err); {
		case typed:
			rec, ok := RecordOf(err)
			if !ok {
				rec = &effect.Record{Failure: failure}
			}
			return &DurableResult{Record: rec, Chain: chain}, nil
		case err != nil:
			return nil, err
		case step.Suspension == nil:
			return &DurableResult{Record: step.Record, Chain: chain}, nil
		}
		s := *step.Suspension
		chain = append(chain, s.Receipt)
		if len(chain) > durable.MaxSuspensions { // durable.Resume ends the run first
			return nil, temporalsdk.NewNonRetryableApplicationError("sandbank/temporal: more suspensions than durable.MaxSuspensions", TypeInfrastructure, nil)
		}
		pending = Pending{Waiting: true, Suspensions: len(chain), Call: s.Call, Args: s.Args, Reason: s.Reason}
		var a Answer
		for {
			answers.Receive(ctx, &a)
			if a.Suspension == 0 || a.Suspension == len(chain) {
				break
			}
			workflow.GetLogger(ctx).Warn("sandbank/temporal: an answer to another suspension is dropped",
				"suspension", a.Suspension, "waiting", len(chain))
		}
		pending = Pending{Suspensions: len(chain)}
		step = DurableStep{}
		err = workflow.ExecuteActivity(ctx, DurableResumeName, ResumeRequest{Suspension: s, Answer: a.Value, Shape: in.Request.Shape,
			Files: in.Request.Files, StoredFiles: in.Request.StoredFiles}).Get(ctx, &step)
	}
}

// registerDurable registers the durable runs' activities.
func (a *Activities) registerDurable(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(a.DurableRun, activity.RegisterOptions{Name: DurableRunName})
	r.RegisterActivityWithOptions(a.DurableResume, activity.RegisterOptions{Name: DurableResumeName})
}

// DurableRun is the activity DurableRunName: it runs req as Run does, but
// durably (durable.Run): a host function of Options.Host may answer
// effect.Suspend, and then the step is the run's Suspension. Its errors
// are Run's.
func (a *Activities) DurableRun(ctx context.Context, req Request) (*DurableStep, error) {
	engine, call, err := a.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	eff, stop, err := a.durableEffect(ctx, engine)
	if err != nil {
		return nil, err
	}
	defer stop()
	return a.step(durable.Run(ctx, eff, call))
}

// DurableResume is the activity DurableResumeName: it reads the
// suspension's continuation (inline, or from Options.Continuations) and
// resumes it with the answer (durable.Resume, checked against Options.Keys)
// on the engine its receipt names. A continuation that does not decode,
// does not agree with itself or is not signed by a trusted key, and an
// answer that is not JSON text, are TypeInvalidCall; a stored one that
// cannot be read is retryable TypeInfrastructure. The rest is DurableRun's.
func (a *Activities) DurableResume(ctx context.Context, req ResumeRequest) (*DurableStep, error) {
	cont, err := a.continuation(ctx, req.Suspension)
	if err != nil {
		return nil, activityError(err, nil, a.limit)
	}
	entry, err := a.pool.Resolve(cont.Receipt.Engine, "", a.engines...)
	if err != nil {
		return nil, activityError(err, nil, a.limit)
	}
	eff, stop, err := a.durableEffect(ctx, entry.Engine)
	if err != nil {
		return nil, err
	}
	defer stop()
	call := effect.Call{Host: a.host, Shape: req.Shape}
	if call.Files, err = inputFiles(ctx, a.scripts, Request{Files: req.Files, StoredFiles: req.StoredFiles}); err != nil {
		return nil, activityError(err, nil, a.limit)
	}
	return a.step(durable.Resume(ctx, eff, cont, req.Answer, call, &durable.Options{Keys: a.keys}))
}

// durableEffect starts heartbeating (when the activity has a heartbeat
// timeout) and returns engine's effect; stop ends the heartbeats.
func (a *Activities) durableEffect(ctx context.Context, engine string) (eff *effect.Effect, stop func(), err error) {
	stop = func() {}
	if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
		stop = a.heartbeatEvery(ctx, hb)
	}
	if eff, err = a.pool.Effect(engine); err != nil {
		stop()
		return nil, nil, activityError(err, nil, a.limit)
	}
	return eff, stop, nil
}

// step makes a durable segment's end the activity's answer: a suspension
// with its continuation inline or stored, a record, or the error as Run
// returns it.
func (a *Activities) step(rec *effect.Record, cont *durable.Continuation, err error) (*DurableStep, error) {
	if cont == nil {
		if err != nil {
			return nil, activityError(err, rec, a.limit)
		}
		if err := checkPayload("result", rec, a.limit); err != nil {
			return nil, payloadAnswer(err, a.limit)
		}
		return &DurableStep{Record: rec}, nil
	}
	text, err := cont.Encode()
	if err != nil {
		return nil, activityError(err, nil, a.limit)
	}
	name, args, _ := cont.Pending()
	s := &Suspension{Call: name, Args: args, Reason: cont.Failure.Reason, Receipt: cont.Receipt}
	switch {
	case len(text) <= MaxInlineContinuation:
		s.Continuation = text
	case a.conts == nil:
		err := &PayloadError{What: "continuation", Bytes: int64(len(text)), Limit: MaxInlineContinuation}
		return nil, temporalsdk.NewNonRetryableApplicationError(err.Error()+" (no Options.Continuations)", TypePayloadTooLarge, nil, nil, nil)
	default:
		addr, err := a.conts.Put(text)
		if errors.Is(err, effect.ErrScriptTooLarge) {
			return nil, temporalsdk.NewNonRetryableApplicationError(
				fmt.Sprintf("sandbank/temporal: the continuation of %d bytes is refused by Options.Continuations: %v", len(text), err),
				TypePayloadTooLarge, nil, nil, nil)
		}
		if err != nil {
			return nil, temporalsdk.NewApplicationError("sandbank/temporal: storing the continuation: "+err.Error(), TypeInfrastructure, nil, nil)
		}
		s.Stored = addr
	}
	if err := checkPayload("result", s, a.limit); err != nil {
		return nil, payloadAnswer(err, a.limit)
	}
	return &DurableStep{Suspension: s}, nil
}

// payloadAnswer is Run's answer to a result over the payload limit.
func payloadAnswer(err error, limit int64) error {
	var pe *PayloadError
	if errors.As(err, &pe) {
		return temporalsdk.NewNonRetryableApplicationError(err.Error(), TypePayloadTooLarge, nil, nil, nil)
	}
	return activityError(err, nil, limit)
}

// continuation reads and decodes s's continuation (durable.Decode, which
// bounds it); Resume checks it.
func (a *Activities) continuation(ctx context.Context, s Suspension) (*durable.Continuation, error) {
	var text []byte
	switch {
	case s.Continuation != nil && s.Stored == "":
		text = s.Continuation
	case s.Continuation == nil && s.Stored != "" && a.conts != nil:
		b, err := a.conts.ReadScript(ctx, s.Stored)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("sandbank/temporal: reading the continuation %s from Options.Continuations: %v", s.Stored, err)
		}
		text = b
	case s.Continuation == nil && s.Stored != "":
		return nil, fmt.Errorf("%w: a stored continuation, and this worker has no Options.Continuations", durable.ErrInvalidContinuation)
	default:
		return nil, fmt.Errorf("%w: the suspension carries no continuation, or two", durable.ErrInvalidContinuation)
	}
	return durable.Decode(text)
}

// continuationKeys returns the keys continuations must be signed by:
// keys, else signer's key when signer is set, else nil (none checked).
func continuationKeys(keys *receipt.KeySet, signer record.Signer) (*receipt.KeySet, error) {
	if keys != nil || signer == nil {
		return keys, nil
	}
	ks, err := receipt.NewKeySet(receipt.TrustedKey{PublicKey: signer.PublicKey()})
	if err != nil {
		return nil, fmt.Errorf("%w: the signer's key: %v", ErrInvalidOptions, err)
	}
	return ks, nil
}
