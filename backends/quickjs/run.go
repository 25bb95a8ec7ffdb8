package quickjs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// A run's lifecycle, the one home of it for both runtimes:
//
//	Evaluate → run.do: start (the run's context) → compiledModule →
//	armColdStart → newJob (nonce, canary, payload, sinks) →
//	the mode's runtime (fresh.go or parked mode's pool.go/instance.go),
//	which returns the facts of the guest call → stopTimers →
//	conclude (facts → outcome).
//
// A runtime only reaches the guest and reads what it left behind; the
// phases, timers, cancellation and interpretation are all here.

// The start-up phases a run goes through before the script starts; a
// StartupError names the one it was in. They are shared by both QuickJS
// runtimes.
const (
	phaseCompile     = jsguest.PhaseCompile
	phaseInstantiate = jsguest.PhaseInstantiate
	phaseBoot        = jsguest.PhaseBoot
	phaseInput       = jsguest.PhaseInput
	phaseScript      = jsguest.PhaseScript
)

// errWallClock is the cancel cause when the script's clock runs out.
var errWallClock = errors.New("quickjs: wall clock expired")

// Evaluate implements spi.Backend: a parked instance restored to its park
// point (ModeParked) or a new module instance (ModeFresh) per call.
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	limits, err := normalise(req.Limits)
	if err != nil {
		return spi.Outcome{}, err
	}
	if err := b.enter(); err != nil {
		return spi.Outcome{}, err
	}
	defer b.runs.Done()

	r := &run{b: b, limits: limits, begun: time.Now()}
	return r.do(ctx, req)
}

func normalise(l spi.Limits) (spi.Limits, error) {
	switch {
	case l.WallClock < 0:
		return l, errors.New("quickjs: negative wall clock")
	case l.MemoryBytes < 0:
		return l, errors.New("quickjs: negative memory limit")
	}
	if l.WallClock == 0 {
		l.WallClock = DefaultWallClock
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.MemoryBytes > MaxMemoryBytes {
		l.MemoryBytes = MaxMemoryBytes
	}
	return l, nil
}

// run is the state of one evaluation.
type run struct {
	b      *Backend
	limits spi.Limits

	stdout      *wasmguest.Stdout
	cancel      context.CancelCauseFunc
	phase       atomic.Value // string
	coldTimer   *time.Timer
	timersMu    sync.Mutex
	wallTimer   *time.Timer
	wallExpired atomic.Bool
	cpuOut      atomic.Bool // the run's fuel ran out (fuel.go)
	begun       time.Time   // when Evaluate started
	startedAt   time.Time   // when the script started (under timersMu)
}

// do is the lifecycle of a run in either mode.
func (r *run) do(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	b := r.b
	runCtx, end := r.start(ctx)
	defer end()

	compiled, err := b.compiledModule(runCtx)
	if err != nil {
		return r.failure(ctx, runCtx, err)
	}
	r.armColdStart(len(req.Input))
	j, err := r.newJob(req)
	if err != nil {
		return spi.Outcome{}, err
	}
	// The guest's stdin: the payload, then the replies to its host calls,
	// asked of the broker with the run's context.
	j.stdin = wasmguest.NewStdin(runCtx, j.payload, j.stdout, req.Host)

	var f jsguest.Facts
	if b.set.mode == ModeParked {
		f, err = r.parked(runCtx, j, compiled)
	} else {
		f, err = r.fresh(runCtx, j, compiled)
	}
	phase := r.getPhase()
	r.stopTimers()
	if err != nil {
		return r.failure(ctx, runCtx, err)
	}
	f.Script = req.Script
	f.WallClockExpired = r.wallExpired.Load()
	f.Late = j.stdout.Took() > r.limits.WallClock
	out, err := r.conclude(ctx, runCtx, f, phase, j.stderr)
	if err == nil && req.Logs != nil {
		out.Stats = r.stats(j)
	}
	return out, err
}

// stats are the run's figures, asked for by the effect's log sink: the
// start-up (from Evaluate to the script's start), the script's time as
// its stdout shows it, and the linear memory's high-water mark.
func (r *run) stats(j *job) spi.Stats {
	s := spi.Stats{MemoryPeakBytes: j.memPeak}
	r.timersMu.Lock()
	startedAt := r.startedAt
	r.timersMu.Unlock()
	if !startedAt.IsZero() {
		s.Startup = startedAt.Sub(r.begun)
		s.ScriptTime = j.stdout.Took()
	}
	return s
}

// start opens a run in either mode: its context, cancelled when the
// backend closes or (once armColdStart armed it) the cold-start allowance
// runs out, naming the phase; the phase is set to compile. The caller must
// call end when the run is over.
func (r *run) start(ctx context.Context) (runCtx context.Context, end func()) {
	b := r.b
	runCtx, cancel := context.WithCancelCause(ctx)
	r.cancel = cancel
	stopLife := context.AfterFunc(b.life, func() { cancel(ErrClosed) })

	r.setPhase(phaseCompile)
	return runCtx, func() {
		r.stopTimers()
		stopLife()
		cancel(nil)
	}
}

// cause is why the run's context ended, or nil. Close ends the backend's
// life at once (and with it a parked instance's context, so the guest
// stops) but the run's context only from a goroutine of its own
// (context.AfterFunc in start): a run that Close stopped can conclude
// before its context says so, and the backend's life decides then.
func (r *run) cause(runCtx context.Context) error {
	if cause := context.Cause(runCtx); cause != nil {
		return cause
	}
	if r.b.life.Err() != nil {
		return ErrClosed
	}
	return nil
}

// conclude turns the facts of a run into its outcome.
func (r *run) conclude(ctx, runCtx context.Context, facts jsguest.Facts, phase string, stderr *cappedBuffer) (spi.Outcome, error) {
	b := r.b
	if b.observe != nil {
		b.observe(facts)
	}
	// The caller's cancellation and the backend's own stops come first:
	// they say nothing about the script.
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	if cause := r.cause(runCtx); cause != nil && !errors.Is(cause, errWallClock) && !errors.Is(cause, context.Canceled) {
		return spi.Outcome{}, cause
	}
	if r.cpuOut.Load() && facts.Started && facts.Record.Kind == 0 {
		return spi.Limited(spi.LimitCPU), nil
	}
	if !b.set.stopCheck && !b.set.wazeroClose && facts.WallClockExpired && facts.Started {
		// Soft wall clock: the script was not stopped, but ran past it.
		return spi.Limited(spi.LimitWallClock), nil
	}
	out, err := jsguest.Interpret(facts, phase)
	if err != nil && !facts.Started {
		return spi.Outcome{}, fmt.Errorf("%w; stderr: %q", err, stderr.head(256))
	}
	return out, err
}

// failure reports an error from a start-up phase, preferring the caller's
// cancellation and the run's own cancel cause.
func (r *run) failure(ctx, runCtx context.Context, err error) (spi.Outcome, error) {
	if cerr := ctx.Err(); cerr != nil {
		return spi.Outcome{}, cerr
	}
	if cause := r.cause(runCtx); cause != nil {
		return spi.Outcome{}, cause
	}
	return spi.Outcome{}, err
}

func (b *Backend) argsFor(memoryBytes int64) []string {
	if b.args != nil {
		return b.args(memoryBytes)
	}
	return jsguest.Args(memoryBytes)
}
