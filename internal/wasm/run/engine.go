package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// ErrClosed is what Evaluate and Warm return, wrapped with the backend's
// package name, after Close. Each backend exposes it as its own
// ErrClosed; match it with errors.Is.
var ErrClosed = errors.New("backend closed")

// errWallClock is the cancel cause when the script's clock runs out.
var errWallClock = errors.New("wall clock expired")

// Runtime is one way of running the guest: a new wazero instance per
// run, a parked wazero instance, a wasmtime store. M is its compiled
// module, F the facts a run leaves behind.
type Runtime[M, F any] interface {
	// Module returns the compiled module, compiling it on first use;
	// waiting for it is bounded by ctx only (the cold-start allowance
	// starts once it is there).
	Module(ctx context.Context) (M, error)
	// Run runs the guest for r and returns what it left behind. It moves
	// r through the start-up phases, makes the run's stdout sink with
	// r.NewStdout (whose start record arms the script's wall clock), and
	// stops the guest when ctx ends. An error says the run reached no
	// facts.
	Run(ctx context.Context, r *Run, m M, req spi.Request) (F, error)
	// Conclude turns the facts of a run into its outcome, once the
	// engine has ruled out the caller's cancellation and the run's own
	// stops (Close, the cold-start allowance).
	Conclude(r *Run, f F, req spi.Request) (spi.Outcome, error)
}

// Engine is the lifecycle every run of a backend goes through, over the
// backend's runtime. It is safe for concurrent use.
type Engine[M, F any] struct {
	name   string
	bounds Bounds
	cold   ColdStart
	rt     Runtime[M, F]

	closedErr error // ErrClosed, named
	wallErr   error // errWallClock, named

	// life is cancelled by Close; every run's context follows it.
	life     context.Context
	shutdown context.CancelFunc
	mu       sync.Mutex // guards closed and every Add to a group Close waits for
	closed   bool
	runs     sync.WaitGroup
}

// New returns the engine of the backend package name (which starts its
// messages), with the bounds of its limits, its cold-start allowance and
// its runtime.
func New[M, F any](name string, bounds Bounds, cold ColdStart, rt Runtime[M, F]) *Engine[M, F] {
	life, shutdown := context.WithCancel(context.Background())
	return &Engine[M, F]{
		name:      name,
		bounds:    bounds,
		cold:      cold,
		rt:        rt,
		closedErr: fmt.Errorf("%s: %w", name, ErrClosed),
		wallErr:   fmt.Errorf("%s: %w", name, errWallClock),
		life:      life,
		shutdown:  shutdown,
	}
}

// Evaluate is a backend's Evaluate: the limits normalised, the run
// registered (so that Close waits for it), its context following the
// backend's life, the compiled module, the cold-start allowance, the
// runtime's run, and the conclusion.
func (e *Engine[M, F]) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	limits, err := e.bounds.normalise(e.name, req.Limits)
	if err != nil {
		return spi.Outcome{}, err
	}
	if err := e.Admit(&e.runs); err != nil {
		return spi.Outcome{}, err
	}
	defer e.runs.Done()

	r := &Run{Limits: limits, begun: time.Now(), name: e.name, wallErr: e.wallErr}
	runCtx, end := r.start(ctx, e.life, e.closedErr)
	defer end()

	m, err := e.rt.Module(runCtx)
	if err != nil {
		return r.failure(ctx, runCtx, err)
	}
	r.armColdStart(e.cold.For(len(req.Input)))
	f, err := e.rt.Run(runCtx, r, m, req)
	r.end()
	if err != nil {
		return r.failure(ctx, runCtx, err)
	}
	// The caller's cancellation and the backend's own stops come first:
	// they say nothing about the script.
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	if cause := r.cause(runCtx); cause != nil && !errors.Is(cause, errWallClock) && !errors.Is(cause, context.Canceled) {
		return spi.Outcome{}, cause
	}
	return e.rt.Conclude(r, f, req)
}

// Warm runs warm (compiling the module, booting instances ahead of the
// first request) as a registered run, or fails after Close.
func (e *Engine[M, F]) Warm(ctx context.Context, warm func(context.Context) error) error {
	if err := e.Admit(&e.runs); err != nil {
		return err
	}
	defer e.runs.Done()
	return warm(ctx)
}

// Close stops every run in flight, waits for them (and for whatever was
// admitted to the group Hold returns) to return, then calls release (nil:
// nothing to release). It is idempotent: release runs once.
func (e *Engine[M, F]) Close(release func() error) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.shutdown()
	e.runs.Wait()
	if release == nil {
		return nil
	}
	return release()
}

// Admit adds one to group, which Close or its release waits for, or
// fails with ErrClosed after Close.
func (e *Engine[M, F]) Admit(group *sync.WaitGroup) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.closedErr
	}
	group.Add(1)
	return nil
}

// Runs is the group of runs Close waits for; work that must end before
// Close returns (a compile on a goroutine of its own) may join it.
func (e *Engine[M, F]) Runs() *sync.WaitGroup { return &e.runs }

// Life is the backend's life: it ends when Close is called.
func (e *Engine[M, F]) Life() context.Context { return e.life }

// Closed is the error of a call after Close: ErrClosed, named.
func (e *Engine[M, F]) Closed() error { return e.closedErr }
