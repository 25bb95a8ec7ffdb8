package temporal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	"go.temporal.io/sdk/activity"
	temporalsdk "go.temporal.io/sdk/temporal"
)

// Options configure Activities. The zero value (or a nil *Options) means
// defaults.
type Options struct {
	// Engines names the engines to run, one effect each. Nil means every
	// engine of the registry. Every worker polling one task queue must run
	// the same engines: a request for an engine the worker does not run is
	// TypeInvalidCall, not retried elsewhere.
	Engines []string
	// Effect configures each engine's effect; nil means effect's defaults.
	// Its MaxLogBytes is lowered, when larger, to an eighth of the payload
	// limit, and its MaxOutputBytes to what the payload limit leaves after
	// the logs and the rest of the record, so that a value too large for
	// Temporal is the typed failure limitExceeded (output). An empty Engine
	// is set to each engine's registry name, which receipts record.
	Effect *effect.Options
	// Scripts is where a request without Source is read by address. Nil
	// means an empty store: such a request is the typed failure
	// scriptMissing.
	Scripts effect.ScriptReader
	// PayloadLimit bounds a result, encoded as Temporal carries it. Zero
	// means DefaultPayloadLimit; set it to the server's
	// limit.blobSize.error when that differs.
	PayloadLimit int64
	// HeartbeatInterval is how often a run heartbeats when its activity has
	// a heartbeat timeout. Zero means a quarter of that timeout. A run whose
	// activity has no heartbeat timeout does not heartbeat.
	HeartbeatInterval time.Duration
}

// Activities runs scripts as Temporal activities: one effect per engine,
// each safe for concurrent use. Register it on a worker with Register, or
// use NewWorker.
type Activities struct {
	reg       *registry.Registry
	effects   map[string]*effect.Effect
	limit     int64
	heartbeat time.Duration
}

// ErrInvalidOptions is matched by every error NewActivities returns for
// options it refuses (a nil registry, a negative value, a PayloadLimit too
// small for a record, an unknown engine name). It matches
// effect.ErrInvalidCall too: the caller's own mistake, not retryable.
var ErrInvalidOptions = fmt.Errorf("sandbank/temporal: invalid options: %w", effect.ErrInvalidCall)

// NewActivities builds one effect per engine of reg (or per engine named in
// opts.Engines), each over a backend from the engine's factory. A nil opts
// means defaults. An unknown engine name or options the effect refuses
// are errors that match ErrInvalidOptions (or effect.ErrInvalidCall); a
// factory that fails is an error too; the effects already built are
// closed.
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
	var eo effect.Options
	if o.Effect != nil {
		eo = *o.Effect
	}
	if err := fitPayload(&eo, o.PayloadLimit); err != nil {
		return nil, err
	}
	scripts := o.Scripts
	if scripts == nil {
		scripts = effect.NewMemoryStore()
	}
	names := o.Engines
	if names == nil {
		for _, e := range reg.Engines() {
			names = append(names, e.Engine)
		}
	}
	a := &Activities{reg: reg, effects: make(map[string]*effect.Effect, len(names)),
		limit: o.PayloadLimit, heartbeat: o.HeartbeatInterval}
	for _, name := range names {
		if err := a.add(name, scripts, &eo); err != nil {
			_ = a.Close()
			return nil, err
		}
	}
	return a, nil
}

// add builds the effect of engine name.
func (a *Activities) add(name string, scripts effect.ScriptReader, eo *effect.Options) error {
	if _, dup := a.effects[name]; dup {
		return nil
	}
	entry, err := a.reg.Lookup(name)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	backend, err := entry.Factory()
	if err != nil {
		return fmt.Errorf("sandbank/temporal: engine %q: %w", name, err)
	}
	opts := *eo
	if opts.Engine == "" {
		opts.Engine = name // receipts name the engine as the registry does
	}
	eff, err := effect.New(scripts, backend, &opts)
	if err != nil {
		return fmt.Errorf("sandbank/temporal: engine %q: %w", name, err)
	}
	a.effects[name] = eff
	return nil
}

// Engines returns the names of the engines a runs, sorted.
func (a *Activities) Engines() []string {
	names := make([]string, 0, len(a.effects))
	for name := range a.effects {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Warm warms every engine's effect (see effect.Effect.Warm), so the first
// run on each does not pay for a compile.
func (a *Activities) Warm(ctx context.Context) error {
	for _, name := range a.Engines() {
		if err := a.effects[name].Warm(ctx); err != nil {
			return fmt.Errorf("sandbank/temporal: warming %q: %w", name, err)
		}
	}
	return nil
}

// Close closes every engine's effect and returns the first error.
func (a *Activities) Close() error {
	var first error
	for _, name := range a.Engines() {
		if err := a.effects[name].Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Register registers a.Run as the activity ActivityName.
func (a *Activities) Register(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: ActivityName})
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
	engine, err := a.engineOf(req)
	if err != nil {
		return nil, temporalsdk.NewNonRetryableApplicationError(err.Error(), TypeInvalidCall, nil, nil, nil)
	}
	if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
		stop := a.heartbeatEvery(ctx, hb)
		defer stop()
	}
	rec, err := run(ctx, a.effects[engine], req.call())
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

// engineOf returns the engine that runs req (see Request.Engine and
// Request.Language), or an error saying why none does, quoting what the
// request named as an excerpt (effect.Excerpt).
func (a *Activities) engineOf(req Request) (string, error) {
	if req.Engine != "" {
		if _, ok := a.effects[req.Engine]; !ok {
			return "", fmt.Errorf("sandbank/temporal: this worker does not run engine %q (it runs %s)", effect.Excerpt(req.Engine), strings.Join(a.Engines(), ", "))
		}
		if req.Language != "" && a.effects[req.Engine].Capabilities().Language != req.Language {
			return "", fmt.Errorf("sandbank/temporal: engine %q does not run %q", req.Engine, effect.Excerpt(req.Language))
		}
		return req.Engine, nil
	}
	if req.Language == "" {
		return "", errors.New("sandbank/temporal: the request names no engine and no language")
	}
	if def, err := a.reg.Default(req.Language); err == nil {
		if _, ok := a.effects[def.Engine]; ok {
			return def.Engine, nil
		}
	}
	for _, e := range a.reg.ByLanguage(req.Language) {
		if _, ok := a.effects[e.Engine]; ok {
			return e.Engine, nil
		}
	}
	return "", fmt.Errorf("sandbank/temporal: this worker runs no engine of language %q (it runs %s)", effect.Excerpt(req.Language), strings.Join(a.Engines(), ", "))
}
