package quickjs

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// fresh is ModeFresh's runtime: a new module instance for run r, booted
// inside the run, closed when it ends.
func (r *run) fresh(runCtx context.Context, j *job, compiled wazero.CompiledModule) (jsguest.Facts, error) {
	b := r.b
	m := &meter{fuel: b.set.fuel}
	stdin := &phaseReader{r: j.stdin, first: func() {
		j.inputRead.Store(true)
		m.arm(&r.cpuOut)
		r.SetPhase(wasmrun.PhaseInput)
	}}
	mem := wasmhost.NewAllocator(uint64(r.Limits.MemoryBytes))
	cfg := b.moduleConfig(r.Limits.MemoryBytes, &fakeClock{}, newReplayRand()).
		WithStdin(stdin).
		WithStdout(j.stdoutW).
		WithStderr(j.stderrW)

	r.SetPhase(wasmrun.PhaseInstantiate)
	defer mem.Release() // after the module is closed (deferred below, so run first)
	mod, err := b.rt.InstantiateModule(experimental.WithMemoryAllocator(runCtx, mem), compiled, cfg)
	if err != nil {
		return jsguest.Facts{}, fmt.Errorf("quickjs: instantiate: %w", err)
	}
	defer mod.Close(context.Background())
	memory := mod.Memory()
	start := mod.ExportedFunction("_start")
	if memory == nil || start == nil {
		return jsguest.Facts{}, errors.New("quickjs: the module lacks its memory or _start export")
	}
	if !memory.Write(b.layout.Bottom, j.canary[:]) {
		return jsguest.Facts{}, errors.New("quickjs: the stack canary lies outside linear memory")
	}

	r.SetPhase(wasmrun.PhaseBoot)
	_, callErr := start.Call(withMeter(runCtx, m))
	f := j.factsFrom(memory, b.layout.Bottom, mem)
	setEnding(&f, callErr, runCtx.Err() != nil)
	return f, nil
}
