package quickjs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// Parked mode's instances: one goroutine each, which boots the guest and
// never leaves its call of _start (park.go, wasi.go).

// instance is one parked QuickJS instance, owned by its goroutine.
type instance struct {
	b           *Backend
	pool        *pool // nil for a one-shot instance
	memoryBytes int64
	seat        park.Seat

	ctx   context.Context
	kill  context.CancelCauseFunc
	jobs  chan *job
	ready chan struct{} // closed at the first park, or when the instance ended
	dead  chan struct{} // closed when the goroutine ended

	mem     *wasmhost.Allocator
	clock   *fakeClock
	rng     *replayRand
	meter   *meter
	mod     api.Module
	globals []api.MutableGlobal // every mutable global of the module (parkglobals.go)

	// The park point (park.go).
	snap        experimental.Snapshot // the next run's snapshot, restored once
	retaking    bool                  // restored: the guest's next read takes the next snapshot
	restores    int                   // runs served
	maxRestores int                   // runs it may serve (maxRestores; tests lower it)
	memory      []byte                // linear memory at the park point
	globalVals  []uint64              // the mutable globals at the park point
	wall        int64
	mono        int64
	rngState    []byte
	granted     int32 // the meter's last grant at the park point
	parked      bool
	readyOnce   sync.Once

	// The current run (only the instance goroutine touches these).
	cur   *job
	stdin io.Reader
}

// startInstance starts an instance on a goroutine of its own, running j
// (nil for a background boot), or returns nil after Close.
func (b *Backend) startInstance(p *pool, memoryBytes int64, j *job, compiled wazero.CompiledModule) *instance {
	if b.core.Admit(&b.instances) != nil {
		return nil
	}
	b.boots.Add(1)
	b.live.Add(1)
	ctx, kill := context.WithCancelCause(b.life)
	inst := &instance{
		b:           b,
		pool:        p,
		memoryBytes: memoryBytes,
		ctx:         ctx,
		kill:        kill,
		jobs:        make(chan *job, 1),
		ready:       make(chan struct{}),
		dead:        make(chan struct{}),
		mem:         wasmhost.NewAllocator(uint64(memoryBytes)),
		clock:       &fakeClock{},
		rng:         newReplayRand(),
		meter:       &meter{fuel: b.set.fuel},
		maxRestores: maxRestores,
		cur:         j,
	}
	if j != nil && b.onRun != nil {
		b.onRun(inst)
	}
	if j != nil && p != nil {
		p.Adopt(inst) // before its goroutine can put it back
	}
	go inst.main(compiled)
	return inst
}

// writer sends the guest's stdout or stderr to the current run.
type writer struct {
	inst   *instance
	stdout bool
}

func (w writer) Write(p []byte) (int, error) {
	j := w.inst.cur
	switch {
	case j == nil:
	case w.stdout:
		return j.stdoutW.Write(p)
	default:
		return j.stderrW.Write(p)
	}
	return len(p), nil
}

// main instantiates the module and calls _start, which returns only when
// the instance ends.
func (inst *instance) main(compiled wazero.CompiledModule) {
	b := inst.b
	defer b.instances.Done()
	defer b.live.Add(-1)
	defer close(inst.dead)
	defer inst.kill(nil)
	if j := inst.cur; j != nil {
		j.attach(inst, b.core.Closed)
	}
	parked := false
	defer func() {
		inst.readyOnce.Do(func() { close(inst.ready) })
		if inst.pool != nil {
			inst.pool.Ended(inst, parked)
		}
	}()

	cfg := b.moduleConfig(inst.memoryBytes, inst.clock, inst.rng).
		WithStdout(writer{inst: inst, stdout: true}).
		WithStderr(writer{inst: inst})
	ctx := experimental.WithMemoryAllocator(inst.ctx, inst.mem)
	defer inst.mem.Release() // after the module is closed (deferred below, so run first)
	mod, err := b.rt.InstantiateModule(ctx, compiled, cfg)
	if err != nil {
		inst.fail(fmt.Errorf("quickjs: instantiate: %w", err))
		return
	}
	defer mod.Close(context.Background())
	// When the instance ends, its run's result is delivered already: the
	// waiting caller goes first, before the teardown (closing the module,
	// releasing its memory) that would otherwise hold the P the caller
	// was readied on (0.32 → 0.013 ms p50 from delivery to Evaluate's
	// return for a killed loop, in one instrumented run).
	defer runtime.Gosched()
	inst.mod = mod
	if inst.globals, err = exportedGlobals(mod); err != nil {
		inst.fail(err)
		return
	}
	memory := mod.Memory()
	start := mod.ExportedFunction("_start")
	if memory == nil || start == nil {
		inst.fail(errors.New("quickjs: the module lacks its memory or _start export"))
		return
	}
	canary := inst.bootCanary()
	if canary == nil || !memory.Write(b.layout.Bottom, canary[:]) {
		inst.fail(errors.New("quickjs: the stack canary lies outside linear memory"))
		return
	}
	if j := inst.cur; j != nil {
		j.r.SetPhase(wasmrun.PhaseBoot)
	}
	ctx = park.WithInstance(experimental.WithSnapshotter(ctx), inst)
	ctx = withMeter(ctx, inst.meter)
	_, callErr := start.Call(ctx)
	parked = inst.parked

	j := inst.cur
	if j == nil {
		return
	}
	inst.cur = nil
	j.finish()
	f := inst.facts(j, memory)
	setEnding(&f, callErr, inst.ctx.Err() != nil)
	if inst.pool != nil && parked {
		inst.pool.Leaving(inst) // the replacement is booting before the caller's next run
	}
	inst.deliver(j, f)
}

// bootCanary is the canary that guards the boot: the run's own when the
// instance boots for a run, a random one otherwise.
func (inst *instance) bootCanary() *jsguest.Canary {
	if j := inst.cur; j != nil {
		return j.canary
	}
	c, err := jsguest.NewCanary()
	if err != nil {
		return nil
	}
	return c
}

// fail ends a run that could not reach the guest.
func (inst *instance) fail(err error) {
	if j := inst.cur; j != nil {
		inst.cur = nil
		j.finish()
		j.err = err
		j.delivered = true
		close(j.done)
	}
}

// facts reads what the run of j left behind.
func (inst *instance) facts(j *job, memory api.Memory) jsguest.Facts {
	f := j.factsFrom(memory, inst.b.layout.Bottom, inst.mem)
	j.memPeak = guestMemoryBytes(inst.mod, memory) // the run's, not the instance's (growth.go)
	return f
}

func (inst *instance) deliver(j *job, f jsguest.Facts) {
	if j.delivered {
		return
	}
	j.delivered = true
	j.facts = f
	close(j.done)
}
