//go:build cgo

package wasmtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	wt "github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/sandbank/sandbank/backends/quickjs/internal/guest"
	"github.com/sandbank/sandbank/spi"
)

// The start-up phases a run goes through before the script starts; a
// StartupError names the one it was in. They are shared by both QuickJS
// runtimes.
const (
	phaseCompile     = guest.PhaseCompile
	phaseInstantiate = guest.PhaseInstantiate
	phaseBoot        = guest.PhaseBoot
	phaseInput       = guest.PhaseInput
	phaseScript      = guest.PhaseScript
)

// errWallClock is the cancel cause when the script's clock runs out.
var errWallClock = errors.New("wasmtime: wall clock expired")

// Evaluate implements spi.Backend: one new store and instance per call.
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
		return l, errors.New("wasmtime: negative wall clock")
	case l.MemoryBytes < 0:
		return l, errors.New("wasmtime: negative memory limit")
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

// run is the state of one evaluation; the WASI shadows reach it through
// the store's data.
type run struct {
	b      *Backend
	limits spi.Limits

	store   *wt.Store
	stdin   *guest.Stdin
	stdout  *guest.Stdout
	stderr  *cappedBuffer
	stderrW io.Writer // stderr, with the script's log records taken out (guest.Stderr)
	begun   time.Time // when Evaluate started
	started time.Time // when the script started (under timersMu)

	clockReads atomic.Int64
	monoReads  atomic.Int64
	inputOnce  sync.Once
	inputRead  atomic.Bool
	fuelErr    error // set on the guest's thread, read after the call
	// stackOverflow is set by the stack pass's check (stackOverflow).
	stackOverflow atomic.Bool

	cancel      context.CancelCauseFunc
	phase       atomic.Value // string
	timersMu    sync.Mutex
	coldTimer   *time.Timer
	wallTimer   *time.Timer
	wallExpired atomic.Bool
}

func (r *run) setPhase(p string) { r.phase.Store(p) }
func (r *run) getPhase() string  { s, _ := r.phase.Load().(string); return s }

// inputStarts is called on the guest's first read of stdin: the engine
// booted.
func (r *run) inputStarts() {
	r.inputOnce.Do(func() {
		r.inputRead.Store(true)
		r.setPhase(phaseInput)
	})
}

// scriptStarts is called by the stdout sink, synchronously inside the
// guest's write of the start record (on the guest's thread): the start-up
// phases are over, the script's wall clock starts now and its fuel, on
// the engine that counts it, is its budget.
func (r *run) scriptStarts() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if !r.coldTimer.Stop() {
		return // the allowance already ran out; the run is being stopped
	}
	r.setPhase(phaseScript)
	r.started = time.Now()
	if r.b.rt.fuel {
		r.fuelErr = r.store.SetFuel(r.b.set.fuel)
	}
	r.wallTimer = time.AfterFunc(r.limits.WallClock, r.expireWallClock)
}

// expireWallClock ends the script's wall clock: the run's stdout is sealed
// first, so a record the guest writes from now on is never read (a value
// after the deadline is never delivered, even when the guest finishes
// writing it before it is stopped), then the run is stopped.
func (r *run) expireWallClock() {
	r.stdout.Seal()
	r.wallExpired.Store(true)
	r.cancel(errWallClock)
}

func (r *run) stopTimers() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if r.coldTimer != nil {
		r.coldTimer.Stop()
	}
	if r.wallTimer != nil {
		r.wallTimer.Stop()
	}
}

func (r *run) do(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	b := r.b
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.cancel = cancel
	stopLife := context.AfterFunc(b.life, func() { cancel(ErrClosed) })
	defer stopLife()

	r.setPhase(phaseCompile)
	defer r.stopTimers()

	// Waiting for the compile (once per process, on a goroutine of its
	// own, seconds on a loaded machine) is bounded by the caller's context
	// only; the cold-start allowance starts once the module is there, so
	// no run fails because a compile was slow.
	mod, err := b.module(runCtx)
	if err != nil {
		return r.failure(ctx, runCtx, err)
	}
	r.timersMu.Lock()
	allowance := b.set.coldStart + time.Duration(float64(b.set.coldPerMiB)*float64(len(req.Input))/(1<<20))
	r.coldTimer = time.AfterFunc(allowance, func() {
		cancel(&StartupError{Phase: r.getPhase(), Allowance: allowance})
	})
	r.timersMu.Unlock()
	nonce, err := guest.NewNonce()
	if err != nil {
		return spi.Outcome{}, err
	}
	canary, err := guest.NewCanary()
	if err != nil {
		return spi.Outcome{}, err
	}
	r.stdout = guest.NewStdout(nonce, stdoutLimit(r.limits.MemoryBytes), r.scriptStarts)
	r.stderr = &cappedBuffer{limit: b.set.maxStderrBytes}
	r.stderrW = guest.NewStderr(nonce, req.Logs, r.stderr)
	// stdin: the payload, then the replies to the guest's host calls.
	r.stdin = guest.NewStdin(runCtx, guest.Payload(nonce, req.Script, req.Input, req.Host != nil), r.stdout, req.Host)

	r.setPhase(phaseInstantiate)
	wasi := wt.NewWasiConfig() // no preopens, no environment, stdio shadowed
	defer wasi.Close()
	wasi.SetArgv(guest.Args(r.limits.MemoryBytes))
	store := wt.NewStoreWithData(b.rt.engine, r)
	r.store = store
	stop := newStopFlag(b.rt.engine)
	defer stop.free() // after the store is closed (deferred below, so run first)
	defer store.Close()
	store.SetWasi(wasi)
	store.Limiter(r.limits.MemoryBytes, -1, -1, -1, -1)
	if b.rt.fuel {
		if err := store.SetFuel(bootFuel); err != nil {
			return spi.Outcome{}, fmt.Errorf("wasmtime: fuel: %s", firstLine(err.Error()))
		}
	}
	stop.install(store)
	// From here on, any end of runCtx (the caller, the wall clock, the
	// cold-start allowance, Close) stops the guest at once.
	stopKill := context.AfterFunc(runCtx, stop.set)
	defer stopKill()

	inst, err := b.rt.linker.Instantiate(store, mod)
	if err != nil {
		if r.limits.MemoryBytes < initialMemoryBytes(mod) {
			// The limit is below the module's own initial memory: the
			// engine cannot even start within it.
			return spi.Limited(spi.LimitMemory), nil
		}
		return r.failure(ctx, runCtx, fmt.Errorf("wasmtime: instantiate: %s", firstLine(err.Error())))
	}
	memExt := inst.GetExport(store, "memory")
	start := inst.GetFunc(store, "_start")
	if memExt == nil || memExt.Memory() == nil || start == nil {
		return spi.Outcome{}, errors.New("wasmtime: the module lacks its memory or _start export")
	}
	mem := memExt.Memory()
	data := mem.UnsafeData(store)
	if uint64(b.layout.Bottom)+guest.CanarySize > uint64(len(data)) {
		return spi.Outcome{}, errors.New("wasmtime: the stack canary lies outside linear memory")
	}
	copy(data[b.layout.Bottom:], canary[:])

	r.setPhase(phaseBoot)
	_, callErr := start.Call(store)
	phase := r.getPhase()
	r.stopTimers()

	data = mem.UnsafeData(store)
	var fuelLeft uint64
	if b.rt.fuel {
		fuelLeft, _ = store.GetFuel()
	}
	facts := guest.Facts{
		Record:           r.stdout.Record(),
		Script:           req.Script,
		InputRead:        r.inputRead.Load(),
		Started:          r.stdout.Started(),
		CanaryIntact:     canary.Intact(data[b.layout.Bottom : b.layout.Bottom+guest.CanarySize]),
		MemoryRefused:    nearLimit(uint64(len(data)), uint64(r.limits.MemoryBytes)),
		WallClockExpired: r.wallExpired.Load(),
		Late:             r.stdout.Took() > r.limits.WallClock,
	}
	facts.Ending, facts.ExitCode, facts.Trap = ending(callErr, runCtx.Err() != nil)
	facts.StackExhausted = facts.Ending == guest.EndTrap &&
		(r.stackOverflow.Load() || strings.Contains(callErr.Error(), "call stack exhausted"))
	if b.observe != nil {
		b.observe(r, facts, fuelLeft)
	}

	// The caller's cancellation and the backend's own stops come first:
	// they say nothing about the script.
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, errWallClock) && !errors.Is(cause, context.Canceled) {
		return spi.Outcome{}, cause
	}
	if r.fuelErr != nil {
		return spi.Outcome{}, fmt.Errorf("wasmtime: fuel: %s", firstLine(r.fuelErr.Error()))
	}
	if b.rt.fuel && facts.Started && facts.Ending == guest.EndTrap && fuelLeft == 0 && facts.Record.Kind == 0 {
		// Out of fuel. Read from the store, not from the trap code: the
		// binding's wasmtime.OutOfFuel (11) is not the C API's code for
		// it (12).
		return spi.Limited(spi.LimitCPU), nil
	}
	out, err := guest.Interpret(facts, phase)
	if err != nil && !facts.Started {
		return spi.Outcome{}, fmt.Errorf("%w; stderr: %q", err, r.stderr.head(256))
	}
	if err == nil && req.Logs != nil {
		out.Stats = r.stats(facts, fuelLeft, int64(len(data)))
	}
	return out, err
}

// stats are the run's figures, asked for by the effect's log sink: the
// start-up and the script's time, the fuel the script spent (it gets
// Options.Fuel when it starts; none without a budget), and the linear memory's size at the end
// (wasm memory never shrinks: the high-water mark).
func (r *run) stats(f guest.Facts, fuelLeft uint64, memory int64) spi.Stats {
	s := spi.Stats{MemoryPeakBytes: memory}
	r.timersMu.Lock()
	started := r.started
	r.timersMu.Unlock()
	if f.Started && !started.IsZero() {
		s.Startup = started.Sub(r.begun)
		s.ScriptTime = r.stdout.Took()
		if r.b.rt.fuel && r.fuelErr == nil && fuelLeft <= r.b.set.fuel {
			s.CPUUnit, s.CPUUnits = "fuel", int64(r.b.set.fuel-fuelLeft)
		}
	}
	return s
}

// ending classifies how _start returned. stopping is true when the run
// was being stopped (its stop flag set): an error that is not an exit is
// then the stop, and its text (a backtrace, with RUST_BACKTRACE set) is
// not even formatted.
func ending(err error, stopping bool) (guest.Ending, uint32, string) {
	if err == nil {
		return guest.EndExit, 0, ""
	}
	var werr *wt.Error
	if errors.As(err, &werr) {
		if code, ok := werr.ExitStatus(); ok {
			return guest.EndExit, uint32(code), ""
		}
	}
	if stopping {
		return guest.EndKilled, 0, interruptMessage
	}
	// A trap; an interruption nobody asked for (impossible: only a set
	// flag interrupts) is read as one too.

	return guest.EndTrap, 0, firstLine(err.Error())
}

// nearLimit reports whether a linear memory of size bytes stands so
// close to the limit that a refused growth is the likely reason the guest
// stopped: wasmtime's store limiter refuses silently (memory.grow returns
// -1), so the backend cannot observe the refusal itself. Within 1/16 of
// the limit, or 1 MiB, counts.
func nearLimit(size, limit uint64) bool {
	slack := max(limit/16, 1<<20)
	return size+slack > limit
}

// initialMemoryBytes is the module's declared initial linear memory.
func initialMemoryBytes(mod *wt.Module) int64 {
	for _, e := range mod.Exports() {
		if mt := e.Type().MemoryType(); mt != nil && e.Name() == "memory" {
			return int64(mt.Minimum()) * 65536
		}
	}
	return 0
}

// failure reports an error from a start-up phase, preferring the caller's
// cancellation and the run's own cancel cause.
func (r *run) failure(ctx, runCtx context.Context, err error) (spi.Outcome, error) {
	if cerr := ctx.Err(); cerr != nil {
		return spi.Outcome{}, cerr
	}
	if cause := context.Cause(runCtx); cause != nil {
		return spi.Outcome{}, cause
	}
	return spi.Outcome{}, err
}

// stdoutLimit bounds the stdout kept for a run. Only the wrapper writes
// to stdout, and its result is a string held in guest memory, at most
// three bytes of UTF-8 per UTF-16 unit of it.
func stdoutLimit(memoryBytes int64) int {
	n := 3*memoryBytes + 64<<10
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	return int(n)
}

// cappedBuffer keeps the first limit bytes written to it and drops the
// rest, never failing the writer.
type cappedBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *cappedBuffer) head(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf[:min(n, len(c.buf))])
}
