package temporal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/storage"
	"go.temporal.io/sdk/activity"
	temporalsdk "go.temporal.io/sdk/temporal"
)

// Options configure Activities. The zero value (or a nil *Options) means
// defaults.
type Options struct {
	// Engines names the engines to run, one effect each, built on first
	// use. Nil means every engine of the registry. A request naming only
	// a language runs its default engine when the worker runs it, else
	// the first of the language the worker runs, in name order
	// (pool.Pool.Resolve). Every worker polling one task queue must run
	// the same engines: a request for an engine the worker does not run is
	// TypeInvalidCall, not retried elsewhere.
	Engines []string
	// Effect configures each engine's effect; its zero value means the
	// effect's defaults.
	// Its MaxLogBytes is lowered, when larger, to an eighth of the payload
	// limit, and its MaxOutputBytes to what the payload limit leaves after
	// the logs and the rest of the record, so that a value too large for
	// Temporal is the typed failure limitExceeded (output). Its Engine is
	// set to each engine's registry name, which receipts record. Its
	// Limits are the ceiling of a request's (pool.Clamp). Its Signer must
	// be nil: the worker's key is Options.Signer, as it is every door's.
	Effect effect.Options
	// Scripts is where a request without Source is read by address: a
	// store of package storage (a storage.DirStore the process that
	// stores the scripts shares, say). Nil means an empty store: such a
	// request is the typed failure scriptMissing.
	// Request.StoredFiles are read from it too (files.go).
	Scripts effect.ScriptReader
	// PayloadLimit bounds a result, encoded as Temporal carries it. Zero
	// means DefaultPayloadLimit; set it to the server's
	// limit.blobSize.error when that differs.
	PayloadLimit int64
	// HeartbeatInterval is how often a run heartbeats when its activity has
	// a heartbeat timeout. Zero means a quarter of that timeout. A run whose
	// activity has no heartbeat timeout does not heartbeat.
	HeartbeatInterval time.Duration
	// Signer, when not nil, is the worker's key: it signs every run's
	// receipt, the record Run returns and the one RecordOf reads back
	// from a typed failure alike. Nil means unsigned receipts.
	Signer record.Signer
	// Host are the host functions every run's script may call
	// (effect.Call.Host). In a durable run (DurableWorkflow) one may
	// answer effect.Suspend; in any other run that answer is
	// TypeInvalidCall. A host function runs again when its activity is
	// retried (a resumption answers the logged calls from its log, not
	// by calling them): keep them idempotent. Nil means none.
	Host effect.HostFuncs
	// Continuations keeps, by content address, the continuations of
	// suspended durable runs too large to travel in a workflow's history
	// (over MaxInlineContinuation): every worker of the task queue must
	// share it (a storage.DirStore on a shared directory, say, whose
	// MaxScriptBytes is large enough). Nil means none: such a run fails
	// TypePayloadTooLarge.
	Continuations storage.ScriptStore
	// Keys are the keys a suspended run's continuation must be signed by
	// to be resumed (durable.Options.Keys). Nil means Signer's key when
	// Signer is set, else no signature is checked (the continuation is
	// still checked against itself).
	Keys *receipt.KeySet
}

// Activities runs scripts as Temporal activities over a pool of engines
// (package pool): each engine's effect is built on its first run, or by
// Warm, and shared; each is safe for concurrent use. Register it on a
// worker with Register, or use NewWorker.
type Activities struct {
	pool      *pool.Pool
	engines   []string // the engines it runs, sorted
	limit     int64
	heartbeat time.Duration
	host      effect.HostFuncs    // Options.Host
	conts     storage.ScriptStore // Options.Continuations
	keys      *receipt.KeySet     // Options.Keys, or Signer's key
	scripts   effect.ScriptReader // Options.Scripts, for Request.StoredFiles (files.go)
}

// ErrInvalidOptions is matched by every error NewActivities returns for
// options it refuses (a nil registry, a negative value, a PayloadLimit too
// small for a record, an unknown engine name, effect options the effect
// refuses, a signer set in Effect rather than in Signer). It matches effect.ErrInvalidCall too: the caller's own
// mistake, not retryable.
var ErrInvalidOptions = fmt.Errorf("sandbank/temporal: invalid options: %w", effect.ErrInvalidCall)

// NewActivities returns Activities running the engines of reg (or those
// named in opts.Engines). A nil opts means defaults. It builds no backend:
// an engine is built on its first run (or by Warm), and a build that
// failed is tried again by the next run. Options it refuses are errors
// that match ErrInvalidOptions.
func NewActivities(reg *registry.Registry, opts *Options) (*Activities, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil registry", ErrInvalidOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.PayloadLimit < 0 || o.HeartbeatInterval < 0 {
		return nil, fmt.Errorf("%w: negative PayloadLimit or HeartbeatInterval", ErrInvalidOptions)
	}
	if o.PayloadLimit == 0 {
		o.PayloadLimit = DefaultPayloadLimit
	}
	if o.Effect.Signer != nil {
		return nil, fmt.Errorf("%w: Effect.Signer is set: the worker's key is Options.Signer", ErrInvalidOptions)
	}
	eo := o.Effect
	eo.Signer = o.Signer
	if err := fitPayload(&eo, o.PayloadLimit); err != nil {
		return nil, err
	}
	var names []string
	if o.Engines == nil {
		for _, e := range reg.Engines() {
			names = append(names, e.Engine)
		}
	}
	for _, name := range o.Engines {
		if _, err := reg.Lookup(name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	p, err := pool.New(reg, &pool.Options{Effect: eo, Scripts: o.Scripts})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	keys, err := continuationKeys(o.Keys, o.Signer)
	if err != nil {
		return nil, err
	}
	return &Activities{pool: p, engines: names, limit: o.PayloadLimit, heartbeat: o.HeartbeatInterval,
		host: o.Host, conts: o.Continuations, keys: keys, scripts: o.Scripts}, nil
}

// Engines returns the names of the engines a runs, sorted.
func (a *Activities) Engines() []string { return slices.Clone(a.engines) }

// Warm builds and warms every engine's effect (see pool.Pool.Warm), so the
// first run on each does not pay for a build or a compile.
func (a *Activities) Warm(ctx context.Context) error {
	if len(a.engines) == 0 {
		return nil
	}
	if err := a.pool.Warm(ctx, a.engines...); err != nil {
		return fmt.Errorf("sandbank/temporal: %w", err)
	}
	return nil
}

// Close closes every engine's effect built and returns their errors.
func (a *Activities) Close() error { return a.pool.Close() }

// Register registers a.Run as the activity ActivityName, and the durable
// runs' activities (DurableRunName, DurableResumeName).
func (a *Activities) Register(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: ActivityName})
	a.registerDurable(r)
}

// prepare reads what every run of req needs: its engine, by the one
// policy of every door (pool.Resolve), among the engines this worker
// runs, and its call, with the worker's host functions, the limits
// clamped to the worker's ceiling and the input files (inline or
// stored). Its errors are activity errors.
func (a *Activities) prepare(ctx context.Context, req Request) (string, effect.Call, error) {
	entry, err := a.pool.Resolve(req.Engine, req.Language, a.engines...)
	if err != nil {
		return "", effect.Call{}, activityError(err, nil, a.limit)
	}
	call := req.call()
	call.Host = a.host
	if call.Limits, err = pool.Clamp(a.pool.Ceiling(), req.Limits); err != nil {
		return "", effect.Call{}, activityError(err, nil, a.limit)
	}
	if call.Files, err = inputFiles(ctx, a.scripts, req); err != nil {
		return "", effect.Call{}, activityError(err, nil, a.limit)
	}
	return entry.Engine, call, nil
}

// Run is the activity: it runs req's script through the effect of its
// engine and returns the run's record (effect.Record: the value, logs,
// stats and receipt). Its errors are Temporal application
// errors: a typed failure is non-retryable, of type "sandbank.<code>", with
// the failure and the record as its details (FailureOf and RecordOf read
// them back); an invalid request is
// non-retryable TypeInvalidCall; a result over the payload limit is
// non-retryable TypePayloadTooLarge; anything else is retryable
// TypeInfrastructure. When the activity is cancelled (or its worker stops),
// the run is cancelled with it and Run returns the context's error.
//
// While the script runs, Run heartbeats (when the activity has a heartbeat
// timeout), so a run whose worker died is retried once the heartbeat
// timeout passes, not the start-to-close timeout; the heartbeats are also
// how the activity learns that it was cancelled.
func (a *Activities) Run(ctx context.Context, req Request) (*effect.Record, error) {
	engine, call, err := a.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	// Heartbeat from here: an engine's first run builds it, which counts
	// as part of the run.
	if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
		stop := a.heartbeatEvery(ctx, hb)
		defer stop()
	}
	eff, err := a.pool.Effect(engine)
	if err != nil {
		return nil, activityError(err, nil, a.limit)
	}
	rec, err := run(ctx, eff, call)
	if err != nil {
		return nil, activityError(err, rec, a.limit)
	}
	if err := checkPayload("result", rec, a.limit); err != nil {
		var pe *PayloadError
		if errors.As(err, &pe) {
			return nil, temporalsdk.NewNonRetryableApplicationError(err.Error(), TypePayloadTooLarge, nil, nil, nil)
		}
		return nil, activityError(err, nil, a.limit)
	}
	return rec, nil
}

// heartbeatEvery records a heartbeat now and then at the interval until
// the returned function is called.
func (a *Activities) heartbeatEvery(ctx context.Context, timeout time.Duration) (stop func()) {
	interval := a.heartbeat
	if interval == 0 {
		interval = timeout / 4
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
