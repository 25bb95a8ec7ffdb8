package quickjs

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// Parked mode's instances: one goroutine each (internal/wasm/park's
// Core), which boots the guest and never leaves its call of _start
// (park.go).

// instance is one parked QuickJS instance; its Core is its life
// (internal/wasm/park).
type instance struct {
	park.Core[*instance, *job, jsguest.Facts]
	b           *Backend
	memoryBytes int64
	compiled    wazero.CompiledModule

	clock   *fakeClock
	rng     *replayRand
	meter   *meter
	mod     api.Module
	globals wasmhost.Globals // every mutable global of the module

	// The park point (park.go), besides the snapshot.
	memory     []byte   // linear memory at the park point
	globalVals []uint64 // the mutable globals at the park point
	wall       int64
	mono       int64
	rngState   []byte
	granted    int32 // the meter's last grant at the park point
}

// startInstance starts an instance on a goroutine of its own, running j
// (nil for a background boot), or returns nil after Close.
func (b *Backend) startInstance(p *pool, memoryBytes int64, j *job, compiled wazero.CompiledModule) *instance {
	if b.core.Admit(&b.instances) != nil {
		return nil
	}
	b.boots.Add(1)
	b.live.Add(1)
	inst := &instance{
		b:           b,
		memoryBytes: memoryBytes,
		compiled:    compiled,
		clock:       &fakeClock{},
		rng:         newReplayRand(),
		meter:       &meter{fuel: b.set.fuel},
	}
	inst.Init(inst, b.life, p, wasmhost.NewAllocator(uint64(memoryBytes)), j)
	if j != nil {
		if b.onRun != nil {
			b.onRun(inst)
		}
		j.attach(inst, b.core.Closed)
	}
	inst.Start(func() {
		b.live.Add(-1)
		b.instances.Done()
	})
	return inst
}

// Instantiate implements park.Guest.
func (inst *instance) Instantiate(ctx context.Context) (api.Module, error) {
	cfg := inst.b.moduleConfig(inst.memoryBytes, inst.clock, inst.rng).
		WithStdout(inst.Writer(func(j *job) io.Writer { return j.stdoutW })).
		WithStderr(inst.Writer(func(j *job) io.Writer { return j.stderrW }))
	mod, err := inst.b.rt.InstantiateModule(ctx, inst.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("quickjs: instantiate: %w", err)
	}
	return mod, nil
}

// Boot implements park.Guest: the globals, the stack canary of the boot,
// and the fuel meter.
func (inst *instance) Boot(ctx context.Context, mod api.Module) (context.Context, api.Function, error) {
	inst.mod = mod
	var err error
	if inst.globals, err = wasmhost.ExportedGlobals(mod); err != nil {
		return nil, nil, fmt.Errorf("quickjs: parked mode: %w", err)
	}
	memory := mod.Memory()
	start := mod.ExportedFunction("_start")
	if memory == nil || start == nil {
		return nil, nil, errors.New("quickjs: the module lacks its memory or _start export")
	}
	canary := inst.bootCanary()
	if canary == nil || !memory.Write(inst.b.layout.Bottom, canary[:]) {
		return nil, nil, errors.New("quickjs: the stack canary lies outside linear memory")
	}
	if j := inst.Cur; j != nil {
		j.r.SetPhase(wasmrun.PhaseBoot)
	}
	return withMeter(ctx, inst.meter), start, nil
}

// Ended implements park.Guest: the run's facts when the instance ended
// during it.
func (inst *instance) Ended(j *job, callErr error) jsguest.Facts {
	j.finish()
	f := inst.facts(j, inst.mod.Memory())
	setEnding(&f, callErr, inst.Ctx.Err() != nil)
	return f
}

// bootCanary is the canary that guards the boot: the run's own when the
// instance boots for a run, a random one otherwise.
func (inst *instance) bootCanary() *jsguest.Canary {
	if j := inst.Cur; j != nil {
		return j.canary
	}
	c, err := jsguest.NewCanary()
	if err != nil {
		return nil
	}
	return c
}

// Fail implements park.Guest.
func (inst *instance) Fail(j *job, err error) {
	j.finish()
	j.err = err
	j.delivered = true
	close(j.done)
}

// facts reads what the run of j left behind.
func (inst *instance) facts(j *job, memory api.Memory) jsguest.Facts {
	f := j.factsFrom(memory, inst.b.layout.Bottom, inst.Mem)
	j.memPeak = guestMemoryBytes(inst.mod, memory) // the run's, not the instance's (growth.go)
	return f
}

// Deliver implements park.Guest.
func (inst *instance) Deliver(j *job, f jsguest.Facts) {
	if j.delivered {
		return
	}
	j.delivered = true
	j.facts = f
	close(j.done)
}
