package quickjs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

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

	r := &run{b: b, limits: limits}
	if b.set.mode == ModeParked {
		return r.doParked(ctx, req)
	}
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

	stdout      *guest.Stdout
	cancel      context.CancelCauseFunc
	phase       atomic.Value // string
	coldTimer   *time.Timer
	timersMu    sync.Mutex
	wallTimer   *time.Timer
	wallExpired atomic.Bool
}

func (r *run) setPhase(p string) { r.phase.Store(p) }
func (r *run) getPhase() string  { s, _ := r.phase.Load().(string); return s }

// scriptStarts is called by the stdout sink, synchronously inside the
// guest's write of the start record: the start-up phases are over and the
// script's wall clock starts now.
func (r *run) scriptStarts() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if !r.coldTimer.Stop() {
		return // the allowance already ran out; the run is being stopped
	}
	r.setPhase(phaseScript)
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

// armColdStart starts the cold-start allowance, once the compiled module
// is there: waiting for the compile (once per process, on a goroutine of
// its own, seconds on a loaded machine) is bounded by the caller's context
// only, so no run fails because a compile was slow.
func (r *run) armColdStart(inputBytes int) {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	allowance := coldStartAllowance(r.b.set, inputBytes)
	r.coldTimer = time.AfterFunc(allowance, func() {
		r.cancel(&StartupError{Phase: r.getPhase(), Allowance: allowance})
	})
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

func (r *run) do(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	b := r.b
	runCtx, end := r.start(ctx)
	defer end()

	compiled, err := b.compiledModule(runCtx)
	if err != nil {
		return r.failure(ctx, runCtx, err)
	}
	r.armColdStart(len(req.Input))

	nonce, err := guest.NewNonce()
	if err != nil {
		return spi.Outcome{}, err
	}
	canary, err := guest.NewCanary()
	if err != nil {
		return spi.Outcome{}, err
	}
	stdout := guest.NewStdout(nonce, stdoutLimit(r.limits.MemoryBytes), r.scriptStarts)
	r.stdout = stdout
	stderr := &cappedBuffer{limit: b.set.maxStderrBytes}
	var inputRead atomic.Bool
	stdin := &phaseReader{r: bytes.NewReader(guest.Payload(nonce, req.Script, req.Input)), first: func() {
		inputRead.Store(true)
		r.setPhase(phaseInput)
	}}
	mem := &limitedAllocator{limit: uint64(r.limits.MemoryBytes)}

	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: any number of instances side by side
		WithArgs(b.argsFor(r.limits.MemoryBytes)...).
		WithStdin(stdin).
		WithStdout(r.stdoutWriter(stdout)).
		WithStderr(stderr).
		WithStartFunctions(). // _start is called below, after the canary is set
		WithWalltime(fakeWalltime(), sys.ClockResolution(time.Millisecond)).
		WithNanotime(fakeNanotime(), sys.ClockResolution(time.Millisecond)).
		WithNanosleep(func(int64) {}).
		WithOsyield(func() {}).
		WithRandSource(rand.NewChaCha8([32]byte{'s', 'a', 'n', 'd', 'b', 'a', 'n', 'k'}))

	r.setPhase(phaseInstantiate)
	defer mem.release() // after the module is closed (deferred below, so run first)
	mod, err := b.rt.InstantiateModule(experimental.WithMemoryAllocator(runCtx, mem), compiled, cfg)
	if err != nil {
		return r.failure(ctx, runCtx, fmt.Errorf("quickjs: instantiate: %w", err))
	}
	defer mod.Close(context.Background())
	memory := mod.Memory()
	start := mod.ExportedFunction("_start")
	if memory == nil || start == nil {
		return spi.Outcome{}, errors.New("quickjs: the module lacks its memory or _start export")
	}
	if !memory.Write(b.layout.Bottom, canary[:]) {
		return spi.Outcome{}, errors.New("quickjs: the stack canary lies outside linear memory")
	}

	r.setPhase(phaseBoot)
	_, callErr := start.Call(runCtx)
	phase := r.getPhase()
	r.stopTimers()

	back, ok := memory.Read(b.layout.Bottom, guest.CanarySize)
	facts := guest.Facts{
		Record:           stdout.Record(),
		InputRead:        inputRead.Load(),
		Started:          stdout.Started(),
		CanaryIntact:     ok && canary.Intact(back),
		MemoryRefused:    mem.refused.Load(),
		WallClockExpired: r.wallExpired.Load(),
		Late:             stdout.Took() > r.limits.WallClock,
	}
	var exit *sys.ExitError
	switch {
	case callErr == nil:
		facts.Ending = guest.EndExit
	case errors.As(callErr, &exit):
		facts.Ending, facts.ExitCode = guest.EndExit, exit.ExitCode()
		if (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) && runCtx.Err() != nil {
			facts.Ending = guest.EndKilled
		}
	default:
		facts.Ending, facts.Trap = guest.EndTrap, callErr.Error()
		facts.StackExhausted = nativeStackOverflow(callErr)
	}

	return r.conclude(ctx, runCtx, facts, phase, stderr)
}

// conclude turns the facts of a run into its outcome.
func (r *run) conclude(ctx, runCtx context.Context, facts guest.Facts, phase string, stderr *cappedBuffer) (spi.Outcome, error) {
	b := r.b
	if b.observe != nil {
		b.observe(facts)
	}
	// The caller's cancellation and the backend's own stops come first:
	// they say nothing about the script.
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, errWallClock) && !errors.Is(cause, context.Canceled) {
		return spi.Outcome{}, cause
	}
	if !b.set.closeOnDone && facts.WallClockExpired && facts.Started {
		// Soft wall clock: the script was not stopped, but ran past it.
		return spi.Limited(spi.LimitWallClock), nil
	}
	out, err := guest.Interpret(facts, phase)
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

// fakeEpoch is what the script's clock reads at its first reading:
// 2000-01-01T00:00:00Z, far from any host time.
const fakeEpoch = int64(946684800) * int64(time.Second)

// fakeWalltime is a deterministic clock starting at fakeEpoch that
// advances one millisecond per reading, fresh for every run.
func fakeWalltime() sys.Walltime {
	var n atomic.Int64
	return func() (int64, int32) {
		t := fakeEpoch + (n.Add(1)-1)*int64(time.Millisecond)
		return t / 1e9, int32(t % 1e9)
	}
}

// fakeNanotime is a deterministic monotonic clock starting at zero that
// advances one millisecond per reading, fresh for every run.
func fakeNanotime() sys.Nanotime {
	var n atomic.Int64
	return func() int64 { return (n.Add(1) - 1) * int64(time.Millisecond) }
}

// stdoutWriter is what the guest's stdout writes to: the run's sink, seen
// first by the backend's beforeWrite test hook when it is set.
func (r *run) stdoutWriter(s *guest.Stdout) io.Writer {
	if r.b.beforeWrite == nil {
		return s
	}
	return hookedWriter{s, func(p []byte) { r.b.beforeWrite(p, r.expireWallClock) }}
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

// phaseReader calls first before the guest's first read of stdin.
type phaseReader struct {
	r     io.Reader
	once  sync.Once
	first func()
}

func (p *phaseReader) Read(b []byte) (int, error) {
	p.once.Do(p.first)
	return p.r.Read(b)
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

func (b *Backend) argsFor(memoryBytes int64) []string {
	if b.args != nil {
		return b.args(memoryBytes)
	}
	return guest.Args(memoryBytes)
}

// nativeStackOverflow reports whether err is wazero's trap for an
// exhausted native call stack (its wasmruntime.ErrRuntimeStackOverflow,
// which is internal: matched by its fixed text).
func nativeStackOverflow(err error) bool {
	return strings.HasPrefix(err.Error(), "wasm error: stack overflow")
}

// coldStartAllowance is the cold-start allowance of a run whose input is
// inputBytes long.
func coldStartAllowance(set settings, inputBytes int) time.Duration {
	return set.coldStart + time.Duration(float64(set.coldPerMiB)*float64(inputBytes)/(1<<20))
}
