package starlarkwasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// Evaluate implements spi.Backend: a new instance of the guest module per
// call, its linear memory capped at the request's memory limit, stopped
// when the script's wall clock runs out or ctx is done (the run's
// lifecycle is internal/wasm/run's).
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	return b.core.Evaluate(ctx, req)
}

// engineRuntime is the backend's runtime of internal/wasm/run: a fresh wazero
// instance of the guest module per run.
type engineRuntime Backend

// Module implements wasmrun.Runtime.
func (rt *engineRuntime) Module(ctx context.Context) (wazero.CompiledModule, error) {
	return rt.eng.compiledModule(ctx)
}

// Run implements wasmrun.Runtime: one instance of the guest for run r.
func (rt *engineRuntime) Run(runCtx context.Context, r *wasmrun.Run, compiled wazero.CompiledModule, req spi.Request) (facts, error) {
	b := (*Backend)(rt)
	nonce, err := wasmguest.NewNonce()
	if err != nil {
		return facts{}, err
	}
	stdout := r.NewStdout(nonce, stdoutLimit(r.Limits.MemoryBytes, b.maxResult))
	stderr := wasmguest.NewCapped(maxStderrBytes)
	// stderr: the log records go to the request's sink as they arrive,
	// the rest (the Go runtime's own text) to the run's bounded buffer.
	stderrW := wasmguest.NewStderr(nonce, req.Logs, stderr)
	// stdin: the payload, then the replies to the script's host calls,
	// asked of the broker with the run's context (hostcall.go).
	var host spi.Host
	if req.Host != nil {
		host = &stoppableHost{inner: req.Host}
	}
	payload := wasmguest.SizedPayload(nonce, req.Script, req.Input, host != nil)
	stdin := &countingReader{r: wasmguest.NewStdin(runCtx, payload, stdout, host)}
	logs := "0"
	if req.Logs != nil {
		logs = "1"
	}
	mem := wasmhost.NewAllocator(uint64(r.Limits.MemoryBytes))
	defer mem.Release() // after the module is closed (deferred below, so run first)

	cfg := wasmhost.Isolate(wazero.NewModuleConfig()).
		WithName(""). // anonymous: any number of instances side by side
		WithArgs("guest",
			strconv.FormatInt(b.maxSteps, 10),
			strconv.FormatInt(b.maxResult, 10),
			strconv.FormatInt(goMemoryLimit(r.Limits.MemoryBytes), 10),
			logs).
		WithStdin(stdin).
		WithStdout(stdout).
		WithStderr(stderrW)

	r.SetPhase(wasmrun.PhaseInstantiate)
	mod, callErr := b.eng.rt.InstantiateModule(experimental.WithMemoryAllocator(runCtx, mem), compiled, cfg)
	if mod != nil {
		defer mod.Close(context.Background())
	}

	f := facts{
		Record:      stdout.Record(),
		InputRead:   stdin.n.Load() > 0,
		Started:     stdout.Started(),
		OOM:         mem.Refused() || bytes.Contains(stderr.Bytes(), []byte("fatal error: out of memory")),
		Stack:       bytes.Contains(stderr.Bytes(), []byte("fatal error: stack overflow")),
		WallExpired: r.WallClockExpired(),
		Late:        r.Late(),
		Stderr:      stderr,
	}
	var exit *sys.ExitError
	switch {
	case callErr == nil:
		f.Ending = endExit
	case errors.As(callErr, &exit):
		f.Ending, f.ExitCode = endExit, exit.ExitCode()
		if (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) && runCtx.Err() != nil {
			f.Ending = endKilled
		}
	default:
		f.Ending, f.Trap = endTrap, wasmrun.FirstLine(callErr.Error())
	}
	if b.observe != nil {
		b.observe(f)
	}
	return f, nil
}

// Conclude implements wasmrun.Runtime.
func (rt *engineRuntime) Conclude(_ *wasmrun.Run, f facts, _ spi.Request) (spi.Outcome, error) {
	out, err := f.Interpret()
	if err != nil {
		return spi.Outcome{}, fmt.Errorf("%w; stderr: %q", err, f.Stderr.Head(256))
	}
	return out, nil
}

// stdoutLimit bounds the stdout kept for a run: the records, and a result
// the guest held in its memory (within the result bound).
func stdoutLimit(memoryBytes, maxResult int64) int {
	return int(min(memoryBytes, maxResult, math.MaxInt32-64<<10) + 64<<10)
}

// goMemoryLimit is the guest Go runtime's soft memory limit
// (debug.SetMemoryLimit) under a linear memory of memoryBytes: seven
// eighths of it, so that the collector works harder before the hard cap
// is reached and a script that holds half the limit still fits. It is the
// collector's only trigger: the guest turns GOGC off (guest/main.go).
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
