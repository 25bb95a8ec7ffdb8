package quickjs

import (
	"context"
	"slices"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/sandbank/sandbank/backends/quickjs/internal/guest"
)

// Parked mode's park point: the snapshot an instance takes at its first
// read of stdin, and the restore every run starts with.

// parkPoint takes the snapshot, parks, and resumes with a run.
func (inst *instance) parkPoint(ctx context.Context, mod api.Module, stack []uint64) {
	snap := experimental.GetSnapshotter(ctx).Snapshot()
	stk, err := snapshotStack(snap)
	if err != nil {
		inst.fail(err)
		exit(ctx, mod, 1)
	}
	memory := mod.Memory()
	buf, ok := memory.Read(0, memory.Size())
	if !ok {
		exit(ctx, mod, 1)
	}
	if j := inst.cur; j != nil {
		back, ok := memory.Read(inst.b.layout.Bottom, guest.CanarySize)
		if !ok || !j.canary.Intact(back) {
			exit(ctx, mod, 1) // the boot clobbered the stack guard: no snapshot of that
		}
	}
	inst.snap, inst.stack, inst.pristine = snap, stk, slices.Clone(stk)
	inst.memory = slices.Clone(buf)
	inst.globals = inst.internals.globals()
	inst.tables = inst.internals.tableContents()
	copy(inst.readArgs[:], stack[:4])
	inst.wall, inst.mono = inst.clock.wall.Load(), inst.clock.mono.Load()
	inst.rngState = inst.rng.state()
	inst.granted = inst.meter.granted
	inst.parked = true

	j := inst.cur
	if j == nil {
		// Warm returns once its instances are in the pool.
		pooled := inst.pool != nil && inst.pool.put(inst)
		inst.readyOnce.Do(func() { close(inst.ready) })
		if !pooled {
			exit(ctx, mod, 0)
		}
		if j = inst.wait(); j == nil {
			exit(ctx, mod, 0)
		}
	}
	inst.readyOnce.Do(func() { close(inst.ready) })
	inst.resume(mod, j)
}

// wait waits for a run of an instance in the pool; nil means the instance
// is to end.
func (inst *instance) wait() *job {
	select {
	case j := <-inst.jobs:
		return j
	case <-inst.ctx.Done():
		return nil
	}
}

// resume restores the park point and resumes the guest with run j. It
// does not return: the snapshot's Restore unwinds to the park point.
func (inst *instance) resume(mod api.Module, j *job) {
	memory := mod.Memory()
	buf, ok := memory.Read(0, uint32(len(inst.memory)))
	if !ok || memory.Size() != uint32(len(inst.memory)) {
		inst.cur = j
		exit(context.Background(), mod, 1)
	}
	inst.restoreMemory(buf) // stack.go
	inst.internals.setGlobals(inst.globals)
	inst.clock.wall.Store(inst.wall)
	inst.clock.mono.Store(inst.mono)
	inst.rng.restore(inst.rngState)
	inst.mem.ClearRefused()
	inst.unexpected.Store(false)
	inst.meter.granted = inst.granted
	inst.meter.arm(&j.r.cpuOut)
	if inst.b.restored != nil {
		inst.b.restored(inst)
	}
	memory.Write(inst.b.layout.Bottom, j.canary[:]) // inside memory: checked at boot

	inst.cur = j
	inst.stdin = j.stdin
	j.inputRead.Store(true)
	j.r.setPhase(phaseInput)
	errno := inst.readStdin(memory, uint32(inst.readArgs[1]), uint32(inst.readArgs[2]), uint32(inst.readArgs[3]))
	copy(inst.stack, inst.pristine)
	inst.snap.Restore([]uint64{errno})
}
