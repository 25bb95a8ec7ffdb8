package starlarkwasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/spi"
)

// errWallClock is the cancel cause when the script's clock runs out.
var errWallClock = errors.New("starlarkwasm: wall clock expired")

// Evaluate implements spi.Backend: a new instance of the guest module per
// call, its linear memory capped at the request's memory limit, stopped
// when the script's wall clock runs out or ctx is done.
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
	return r.do(ctx, req)
}

func normalise(l spi.Limits) (spi.Limits, error) {
	switch {
	case l.WallClock < 0:
		return l, errors.New("starlarkwasm: negative wall clock")
	case l.MemoryBytes < 0:
		return l, errors.New("starlarkwasm: negative memory limit")
	}
	if l.WallClock == 0 {
		l.WallClock = DefaultWallClock
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	l.MemoryBytes = min(l.MemoryBytes, MaxMemoryBytes)
	return l, nil
}

// run is the state of one evaluation.
type run struct {
	b      *Backend
	limits spi.Limits

	stdout      *wasmguest.Stdout
	cancel      context.CancelCauseFunc
	timersMu    sync.Mutex
	coldTimer   *time.Timer
	wallTimer   *time.Timer
	wallExpired atomic.Bool
}

// scriptStarts is called by the stdout sink, synchronously inside the
// guest's write of the start record: the start-up is over and the
// script's wall clock starts now.
func (r *run) scriptStarts() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if r.coldTimer != nil && !r.coldTimer.Stop() {
		return // the allowance already ran out; the run is being stopped
	}
	r.wallTimer = time.AfterFunc(r.limits.WallClock, r.expireWallClock)
}

// expireWallClock seals the run's stdout first, so that a record the
// guest writes from now on is never read, then stops the guest.
func (r *run) expireWallClock() {
	r.stdout.Seal()
	r.wallExpired.Store(true)
	r.cancel(errWallClock)
}

func (r *run) armColdStart(inputBytes int) {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	allowance := r.b.coldStart + time.Duration(float64(DefaultColdStartPerMiB)*float64(inputBytes)/(1<<20))
	r.coldTimer = time.AfterFunc(allowance, func() {
		r.cancel(&StartupError{Allowance: allowance})
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

func (r *run) do(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	b := r.b
	runCtx, cancel := context.WithCancelCause(ctx)
	r.cancel = cancel
	stopLife := context.AfterFunc(b.life, func() { cancel(ErrClosed) })
	defer func() {
		r.stopTimers()
		stopLife()
		cancel(nil)
	}()

	compiled, err := b.eng.compiledModule(runCtx)
	if err != nil {
		return r.failure(ctx, runCtx, err)
	}
	r.armColdStart(len(req.Input))

	nonce, err := wasmguest.NewNonce()
	if err != nil {
		return spi.Outcome{}, err
	}
	r.stdout = wasmguest.NewStdout(nonce, stdoutLimit(r.limits.MemoryBytes, b.maxResult), r.scriptStarts)
	stderr := &cappedBuffer{limit: maxStderrBytes}
	// stdin: the payload, then the replies to the script's host calls,
	// asked of the broker with the run's context (hostcall.go).
	var host spi.Host
	if req.Host != nil {
		host = &stoppableHost{inner: req.Host}
	}
	payload := wasmguest.SizedPayload(nonce, req.Script, req.Input, host != nil)
	stdin := &countingReader{r: wasmguest.NewStdin(runCtx, payload, r.stdout, host)}
	// stdout: the log records go to the request's sink as they arrive,
	// the rest to the run's record sink.
	logs := "0"
	if req.Logs != nil {
		logs = "1"
	}
	tap := wasmguest.NewLogTap(nonce, r.stdout, req.Logs)
	mem := wasmhost.NewAllocator(uint64(r.limits.MemoryBytes))
	defer mem.Release() // after the module is closed (deferred below, so run first)

	cfg := wasmhost.Isolate(wazero.NewModuleConfig()).
		WithName(""). // anonymous: any number of instances side by side
		WithArgs("guest",
			strconv.FormatInt(b.maxSteps, 10),
			strconv.FormatInt(b.maxResult, 10),
			strconv.FormatInt(goMemoryLimit(r.limits.MemoryBytes), 10),
			logs).
		WithStdin(stdin).
		WithStdout(tap).
		WithStderr(stderr)

	mod, callErr := b.eng.rt.InstantiateModule(experimental.WithMemoryAllocator(runCtx, mem), compiled, cfg)
	if mod != nil {
		defer mod.Close(context.Background())
	}
	r.stopTimers()

	f := facts{
		record:      r.stdout.Record(),
		inputRead:   stdin.n.Load() > 0,
		started:     r.stdout.Started(),
		oom:         mem.Refused() || bytes.Contains(stderr.bytes(), []byte("fatal error: out of memory")),
		stack:       bytes.Contains(stderr.bytes(), []byte("fatal error: stack overflow")),
		wallExpired: r.wallExpired.Load(),
		late:        r.stdout.Took() > r.limits.WallClock,
	}
	var exit *sys.ExitError
	switch {
	case callErr == nil:
		f.ending = endExit
	case errors.As(callErr, &exit):
		f.ending, f.exitCode = endExit, exit.ExitCode()
		if (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) && runCtx.Err() != nil {
			f.ending = endKilled
		}
	default:
		f.ending, f.trap = endTrap, firstLine(callErr.Error())
	}
	if b.observe != nil {
		b.observe(f)
	}
	// The caller's cancellation and the backend's own stops come first:
	// they say nothing about the script.
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, errWallClock) && !errors.Is(cause, context.Canceled) {
		return spi.Outcome{}, cause
	}
	out, err := f.interpret()
	if err != nil {
		return spi.Outcome{}, fmt.Errorf("%w; stderr: %q", err, stderr.head(256))
	}
	return out, nil
}

// failure reports an error from before the guest ran, preferring the
// caller's cancellation and the run's own cancel cause.
func (r *run) failure(ctx, runCtx context.Context, err error) (spi.Outcome, error) {
	if cerr := ctx.Err(); cerr != nil {
		return spi.Outcome{}, cerr
	}
	if cause := context.Cause(runCtx); cause != nil {
		return spi.Outcome{}, cause
	}
	return spi.Outcome{}, err
}

// stdoutLimit bounds the stdout kept for a run: the records, and a result
// the guest held in its memory (within the result bound).
func stdoutLimit(memoryBytes, maxResult int64) int {
	return int(min(memoryBytes, maxResult, math.MaxInt32-64<<10) + 64<<10)
}

// goMemoryLimit is the guest Go runtime's soft memory limit
// (debug.SetMemoryLimit) under a linear memory of memoryBytes: seven
// eighths of it, so that the collector works harder before the hard cap
// is reached and a script that holds half the limit still fits.
func goMemoryLimit(memoryBytes int64) int64 { return max(memoryBytes/8*7, 1) }

// countingReader counts what the guest read of its stdin.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
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

func (c *cappedBuffer) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf)
}

func (c *cappedBuffer) head(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf[:min(n, len(c.buf))])
}
