package quickjs

import (
	"context"
	"github.com/sandbank/sandbank/internal/hugepage"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// Parked mode's park point: the snapshot an instance takes at its first
// read of stdin, and the restore every run starts with.
//
// A snapshot (wazero's experimental Snapshotter) is restored once: its
// saved call stack becomes the live one, which the run then overwrites.
// So every run takes the next run's snapshot. The park-read pass
// (internal/wasm/rewrite) wraps the guest's fd_read in a loop that calls
// it again while it answers ParkRetry; resume restores the snapshot with
// ParkRetry, and the guest, back at its park point, calls fd_read again
// with the same arguments. That call (retake) snapshots the guest there,
// memory and globals still as resume restored them, before it serves the
// run's first read.

// maxRestores is how many runs a parked instance serves before it is
// replaced: each snapshot's stack is 16 bytes longer than the one it
// was taken from (wazero v1.12.0 clones a stack with 16 bytes to spare),
// so an instance's snapshots would grow without bound. 2,048 runs add
// 32 KiB to a stack of about 40 KiB; the replacement's boot (about 4 ms)
// is off the request path.
const maxRestores = 2048

// parkPoint takes the snapshot, parks, and resumes with a run.
func (inst *instance) parkPoint(ctx context.Context, mod api.Module) {
	snap := experimental.GetSnapshotter(ctx).Snapshot()
	memory := mod.Memory()
	buf, ok := memory.Read(0, memory.Size())
	if !ok {
		park.Exit(ctx, mod, 1)
	}
	if j := inst.cur; j != nil {
		back, ok := memory.Read(inst.b.layout.Bottom, jsguest.CanarySize)
		if !ok || !j.canary.Intact(back) {
			park.Exit(ctx, mod, 1) // the boot clobbered the stack guard: no snapshot of that
		}
	}
	inst.snap = snap
	inst.memory = hugepage.Clone(buf)
	inst.globalVals = saveGlobals(inst.globals)
	inst.wall, inst.mono = inst.clock.wall.Load(), inst.clock.mono.Load()
	inst.rngState = inst.rng.state()
	inst.granted = inst.meter.granted
	inst.parked = true

	j := inst.cur
	if j == nil {
		// Warm returns once its instances are in the pool.
		pooled := inst.pool != nil && inst.pool.Put(inst)
		inst.readyOnce.Do(func() { close(inst.ready) })
		if !pooled {
			park.Exit(ctx, mod, 0)
		}
		if j = inst.wait(); j == nil {
			park.Exit(ctx, mod, 0)
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
// does not return: the snapshot's Restore unwinds to the park point,
// where the guest reads again (retake).
func (inst *instance) resume(mod api.Module, j *job) {
	memory := mod.Memory()
	if !inst.restoreMemory(memory) { // growth.go
		inst.cur = j
		park.Exit(context.Background(), mod, 1)
	}
	restoreGlobals(inst.globals, inst.globalVals)
	inst.clock.wall.Store(inst.wall)
	inst.clock.mono.Store(inst.mono)
	inst.rng.restore(inst.rngState)
	inst.mem.ClearRefused()
	inst.seat.ClearUnexpected()
	inst.meter.granted = inst.granted
	inst.meter.arm(&j.r.cpuOut)
	if inst.b.restored != nil {
		inst.b.restored(inst)
	}
	memory.Write(inst.b.layout.Bottom, j.canary[:]) // inside memory: checked at boot

	inst.cur = j
	inst.stdin = j.stdin
	j.inputRead.Store(true)
	j.r.SetPhase(wasmrun.PhaseInput)
	inst.restores++
	inst.retaking = true
	inst.snap.Restore([]uint64{uint64(wasmrewrite.ParkRetry)})
}

// retake takes the snapshot the next run restores, in the read the guest
// repeats after a restore: the guest stands at its park point again, with
// the memory and globals resume wrote back, and no code but the
// park-read wrapper's loop has run since.
func (inst *instance) retake(ctx context.Context) {
	inst.snap = experimental.GetSnapshotter(ctx).Snapshot()
	inst.retaking = false
}

// worn reports whether the instance has served its maxRestores runs.
func (inst *instance) worn() bool { return inst.restores >= inst.maxRestores }
