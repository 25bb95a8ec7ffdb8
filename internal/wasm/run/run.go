package run

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// Run is the state of one evaluation that the engine keeps: its phase,
// its two clocks (the cold-start allowance, which bounds the start-up
// phases, and the script's wall clock, which starts when the script
// does) and its stdout sink. A runtime reads and moves it; the engine
// arms and stops it.
type Run struct {
	// Limits are the run's limits, normalised.
	Limits spi.Limits

	name    string
	wallErr error
	begun   time.Time // when Evaluate started
	life    context.Context
	closed  error
	cancel  context.CancelCauseFunc
	phase   atomic.Value // string
	ended   atomic.Value // string: the phase when the runtime's run returned
	stdout  *wasmguest.Stdout
	onStart func()

	timersMu    sync.Mutex
	coldTimer   *time.Timer
	wallTimer   *time.Timer
	startedAt   time.Time // when the script started (under timersMu)
	wallExpired atomic.Bool
}

// start opens the run: its context, cancelled when the backend's life
// ends (with closed) or, once armColdStart armed it, the cold-start
// allowance runs out. The phase is PhaseCompile. The caller must call end
// when the run is over.
func (r *Run) start(ctx, life context.Context, closed error) (runCtx context.Context, end func()) {
	runCtx, cancel := context.WithCancelCause(ctx)
	r.cancel, r.life, r.closed = cancel, life, closed
	stopLife := context.AfterFunc(life, func() { cancel(closed) })
	r.SetPhase(PhaseCompile)
	return runCtx, func() {
		r.stopTimers()
		stopLife()
		cancel(nil)
	}
}

// SetPhase moves the run to start-up phase p.
func (r *Run) SetPhase(p string) { r.phase.Store(p) }

// Phase is the run's phase: once the runtime's run returned, the phase it
// was in then.
func (r *Run) Phase() string {
	if s, ok := r.ended.Load().(string); ok {
		return s
	}
	s, _ := r.phase.Load().(string)
	return s
}

// OnStart sets f to be called when the script starts, under the run's
// timer lock, once the cold-start allowance is stopped (wasmtime gives
// the script its fuel there). Set it before the guest runs.
func (r *Run) OnStart(f func()) { r.onStart = f }

// NewStdout returns the run's stdout sink for nonce n, keeping at most
// limit bytes: its start record starts the script's wall clock, and it is
// sealed when that clock runs out.
func (r *Run) NewStdout(n wasmguest.Nonce, limit int) *wasmguest.Stdout {
	r.stdout = wasmguest.NewStdout(n, limit, r.scriptStarts)
	return r.stdout
}

// WallClockExpired reports whether the script's wall clock ran out.
func (r *Run) WallClockExpired() bool { return r.wallExpired.Load() }

// Late reports whether the script's record arrived after its wall clock,
// whether or not the timer had fired by then: a value after the deadline
// is never delivered.
func (r *Run) Late() bool { return r.stdout != nil && r.stdout.Took() > r.Limits.WallClock }

// Stats returns the run's start-up (from Evaluate to the script's start)
// and the script's time as its stdout shows it, or false when the script
// never started.
func (r *Run) Stats() (startup, script time.Duration, ok bool) {
	r.timersMu.Lock()
	startedAt := r.startedAt
	r.timersMu.Unlock()
	if startedAt.IsZero() || r.stdout == nil {
		return 0, 0, false
	}
	return startedAt.Sub(r.begun), r.stdout.Took(), true
}

// scriptStarts is called by the stdout sink, synchronously inside the
// guest's write of the start record: the start-up phases are over and the
// script's wall clock starts now.
func (r *Run) scriptStarts() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if r.coldTimer != nil && !r.coldTimer.Stop() {
		return // the allowance already ran out; the run is being stopped
	}
	r.SetPhase(PhaseScript)
	r.startedAt = time.Now()
	if r.onStart != nil {
		r.onStart()
	}
	r.wallTimer = time.AfterFunc(r.Limits.WallClock, r.ExpireWallClock)
}

// ExpireWallClock ends the script's wall clock (its timer calls it; a
// test hook may call it early): the run's stdout is sealed first, so a
// record the guest writes from now on is never read (a value after the
// deadline is never delivered, even when the guest finishes writing it
// before it is stopped), then the run is stopped.
func (r *Run) ExpireWallClock() {
	r.stdout.Seal()
	r.wallExpired.Store(true)
	r.cancel(r.wallErr)
}

// armColdStart starts the cold-start allowance, once the compiled module
// is there: waiting for the compile (once per process, on a goroutine of
// its own, seconds on a loaded machine) is bounded by the caller's context
// only, so no run fails because a compile was slow. The run is in
// PhaseInstantiate from here on, until the runtime moves it on.
func (r *Run) armColdStart(allowance time.Duration) {
	r.SetPhase(PhaseInstantiate)
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	r.coldTimer = time.AfterFunc(allowance, func() {
		r.cancel(&StartupError{Backend: r.name, Phase: r.Phase(), Allowance: allowance})
	})
}

// end records the phase the run ended in and stops its clocks.
func (r *Run) end() {
	r.ended.Store(r.Phase())
	r.stopTimers()
}

func (r *Run) stopTimers() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if r.coldTimer != nil {
		r.coldTimer.Stop()
	}
	if r.wallTimer != nil {
		r.wallTimer.Stop()
	}
}

// cause is why the run's context ended, or nil. Close ends the backend's
// life at once (and with it a parked instance's context, so the guest
// stops) but the run's context only from a goroutine of its own
// (context.AfterFunc in start): a run that Close stopped can conclude
// before its context says so, and the backend's life decides then.
func (r *Run) cause(runCtx context.Context) error {
	if cause := context.Cause(runCtx); cause != nil {
		return cause
	}
	if r.life.Err() != nil {
		return r.closed
	}
	return nil
}

// failure reports an error from a start-up phase, preferring the caller's
// cancellation and the run's own cancel cause.
func (r *Run) failure(ctx, runCtx context.Context, err error) (spi.Outcome, error) {
	if cerr := ctx.Err(); cerr != nil {
		return spi.Outcome{}, cerr
	}
	if cause := r.cause(runCtx); cause != nil {
		return spi.Outcome{}, cause
	}
	return spi.Outcome{}, err
}

// SeeWrites returns w, seen first by before (a test hook) with the run's
// ExpireWallClock when before is not nil.
func (r *Run) SeeWrites(w io.Writer, before func(p []byte, expireWallClock func())) io.Writer {
	if before == nil {
		return w
	}
	return hookedWriter{w, func(p []byte) { before(p, r.ExpireWallClock) }}
}

// hookedWriter calls before ahead of every write to w.
type hookedWriter struct {
	w      io.Writer
	before func([]byte)
}

func (h hookedWriter) Write(p []byte) (int, error) {
	h.before(p)
	return h.w.Write(p)
}
