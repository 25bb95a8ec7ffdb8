package quickjs

import (
	"context"
	"io"

	"github.com/tetratelabs/wazero/api"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/hugepage"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// Parked mode's park point: what an instance saves, besides the snapshot
// of its call stack, at its first read of stdin, and puts back before
// every run (internal/wasm/park's Core takes and restores the snapshot;
// a snapshot is restored once, and the read the guest repeats after a
// restore takes the next run's).

// Save implements park.Guest: linear memory (after checking that the
// boot left the stack guard intact), the mutable globals, the clocks,
// the random source and the fuel meter's grant.
func (inst *instance) Save(ctx context.Context, mod api.Module) {
	memory := mod.Memory()
	buf, ok := memory.Read(0, memory.Size())
	if !ok {
		park.Exit(ctx, mod, 1)
	}
	if j := inst.Cur; j != nil {
		back, ok := memory.Read(inst.b.layout.Bottom, jsguest.CanarySize)
		if !ok || !j.canary.Intact(back) {
			park.Exit(ctx, mod, 1) // the boot clobbered the stack guard: no snapshot of that
		}
	}
	inst.memory = hugepage.Clone(buf)
	inst.globalVals = inst.globals.Save()
	inst.wall, inst.mono = inst.clock.wall.Load(), inst.clock.mono.Load()
	inst.rngState = inst.rng.state()
	inst.granted = inst.meter.granted
}

// Restore implements park.Guest: it puts the park point back for run j,
// and writes j's stack canary.
func (inst *instance) Restore(mod api.Module, j *job) bool {
	memory := mod.Memory()
	if !inst.restoreMemory(memory) { // growth.go
		return false
	}
	inst.globals.Restore(inst.globalVals)
	inst.clock.wall.Store(inst.wall)
	inst.clock.mono.Store(inst.mono)
	inst.rng.restore(inst.rngState)
	inst.meter.granted = inst.granted
	inst.meter.arm(&j.r.cpuOut)
	if inst.b.restored != nil {
		inst.b.restored(inst)
	}
	memory.Write(inst.b.layout.Bottom, j.canary[:]) // inside memory: checked at boot
	j.inputRead.Store(true)
	j.r.SetPhase(wasmrun.PhaseInput)
	return true
}

// Stdin implements park.Guest.
func (inst *instance) Stdin(j *job) io.Reader { return j.stdin }

// Exited implements park.Guest: the run ended at its proc_exit with
// code, and the instance parks again when the run ended as expected: a
// result or a thrown value, its canary intact, memory never refused and
// restorable (growth.go), its wall clock not run out, and not stopped.
func (inst *instance) Exited(mod api.Module, j *job, code uint32) (jsguest.Facts, bool) {
	memory := mod.Memory()
	f := inst.facts(j, memory)
	f.Ending, f.ExitCode = jsguest.EndExit, code
	keep := code == 0 && f.CanaryIntact && !f.MemoryRefused && f.Started && f.Record.Settled() &&
		inst.memoryParkable(memory) && !j.r.WallClockExpired()
	if j.finish() {
		keep = false
	}
	return f, keep
}
