package starlarkwasm

import (
	"context"

	"github.com/tetratelabs/wazero"

	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/internal/starlarkguest"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// parkedRuntime is ModeParked's runtime of internal/wasm/run: run r on a
// parked instance of the pool of its key, or on an instance booted for
// it (park.go).
type parkedRuntime Backend

// Module implements wasmrun.Runtime.
func (rt *parkedRuntime) Module(ctx context.Context) (wazero.CompiledModule, error) {
	return rt.peng.compiledModule(ctx)
}

// Run implements wasmrun.Runtime.
func (rt *parkedRuntime) Run(runCtx context.Context, r *wasmrun.Run, compiled wazero.CompiledModule, req spi.Request) (facts, error) {
	b := (*Backend)(rt)
	j, err := b.newJob(runCtx, r, req)
	if err != nil {
		return facts{}, err
	}
	key := poolKey{memoryBytes: r.Limits.MemoryBytes, logs: req.Logs != nil}
	p := b.pools.For(key)
	inst, ok, err := park.Take(runCtx, p, b.core.Closed())
	switch {
	case err != nil:
		return facts{}, err
	case ok:
		inst.Jobs <- j
	default:
		if inst = b.startInstance(p, key, j, compiled); inst == nil {
			return facts{}, b.core.Closed()
		}
	}
	if !inst.Served(j.done) {
		return facts{}, b.core.Closed()
	}
	return j.f, j.err
}

// Conclude implements wasmrun.Runtime.
func (rt *parkedRuntime) Conclude(r *wasmrun.Run, f facts, req spi.Request) (spi.Outcome, error) {
	return (*engineRuntime)(rt).Conclude(r, f, req)
}

// newJob makes the run's streams: stdout (whose start record starts the
// script's clock), stderr (log records to the request's sink, the rest
// kept, bounded) and stdin (the payload, then the replies to the
// script's host calls and file records).
func (b *Backend) newJob(runCtx context.Context, r *wasmrun.Run, req spi.Request) (*job, error) {
	nonce, err := wasmguest.NewNonce()
	if err != nil {
		return nil, err
	}
	stdout := r.NewStdout(nonce, starlarkguest.StdoutLimit(r.Limits.MemoryBytes, b.maxResult))
	stderr := wasmguest.NewCapped(starlarkguest.MaxStderrBytes)
	var host spi.Host
	if req.Host != nil {
		host = &starlarkguest.StoppableHost{Inner: req.Host}
	}
	payload := wasmguest.SizedPayload(nonce, req.Script, req.Input, host != nil)
	replies := wasmguest.NewStdin(runCtx, payload, stdout, host)
	files := runfiles.New(req) // served to the guest's file records
	replies.SetFiles(files)
	return &job{
		ctx:     runCtx,
		r:       r,
		files:   files,
		stdin:   &countingReader{r: replies},
		stdout:  stdout,
		stderrW: wasmguest.NewStderr(nonce, req.Logs, stderr),
		stderr:  stderr,
		done:    make(chan struct{}),
	}, nil
}
