package starlarkwasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/internal/starlarkguest"
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
	stdout := r.NewStdout(nonce, starlarkguest.StdoutLimit(r.Limits.MemoryBytes, b.maxResult))
	stderr := wasmguest.NewCapped(starlarkguest.MaxStderrBytes)
	// stderr: the log records go to the request's sink as they arrive,
	// the rest (the Go runtime's own text) to the run's bounded buffer.
	stderrW := wasmguest.NewStderr(nonce, req.Logs, stderr)
	// stdin: the payload, then the replies to the script's host calls,
	// asked of the broker with the run's context (hostcall.go).
	var host spi.Host
	if req.Host != nil {
		host = &starlarkguest.StoppableHost{Inner: req.Host}
	}
	payload := wasmguest.SizedPayload(nonce, req.Script, req.Input, host != nil)
	replies := wasmguest.NewStdin(runCtx, payload, stdout, host)
	files := runfiles.New(req) // served to the guest's file records
	replies.SetFiles(files)
	stdin := &countingReader{r: replies}
	mem := wasmhost.NewAllocator(uint64(r.Limits.MemoryBytes))
	defer mem.Release() // after the module is closed (deferred below, so run first)

	cfg := wasmhost.Isolate(wazero.NewModuleConfig()).
		WithName(""). // anonymous: any number of instances side by side
		WithArgs(append([]string{"guest"}, starlarkguest.Args(b.maxSteps, b.maxResult, r.Limits.MemoryBytes, req.Logs != nil)...)...).
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
		Files:       files,
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
