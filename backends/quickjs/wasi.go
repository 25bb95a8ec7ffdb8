package quickjs

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/wasm/park"
)

// Parked mode's WASI overrides: fd_read (the park point, then the run's
// stdin), proc_exit (the end of a run, and the next park) and ENOSYS for
// every import outside the expected set.

// expectedWASI are the WASI functions a run may call besides fd_read and
// proc_exit, served by wazero's own implementation: none of them changes
// state that a restore does not reset (fd_write goes to the run's own
// buffers, the clocks and the random source are reset on restore).
var expectedWASI = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_res_get": true, "clock_time_get": true, "random_get": true, "sched_yield": true,
	"fd_fdstat_get": true, "fd_prestat_get": true, "fd_prestat_dir_name": true, "fd_write": true,
}

// parkedWASI is parked mode's host module wasi_snapshot_preview1.
var parkedWASI = park.WASI[*instance]{
	Expected: expectedWASI,
	FdRead:   parkedFdRead,
	ProcExit: parkedProcExit,
}

// instanceOf returns the instance a host function serves, or nil.
func instanceOf(ctx context.Context) *instance {
	inst, _ := park.InstanceOf[*instance](ctx)
	return inst
}

// parkedFdRead is fd_read in parked mode. The first read of stdin is the
// park point; the read the guest repeats after a restore takes the next
// run's snapshot (park.go); every read but the first is served from the
// run's payload.
func parkedFdRead(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceOf(ctx)
	if inst == nil {
		stack[0] = park.ErrnoBadf
		return
	}
	if int32(stack[0]) != 0 {
		inst.seat.MarkUnexpected()
		stack[0] = park.ErrnoBadf
		return
	}
	if inst.snap == nil {
		inst.parkPoint(ctx, mod) // does not return
	}
	if inst.retaking {
		inst.retake(ctx) // the read repeated at the park point, after a restore
	}
	if inst.stdin == nil {
		stack[0] = park.ErrnoBadf
		return
	}
	stack[0] = park.ReadInto(mod.Memory(), inst.stdin, uint32(stack[1]), uint32(stack[2]), uint32(stack[3]))
}

// parkedProcExit is proc_exit in parked mode: it ends the run, and parks
// the instance again when the run ended as expected.
func parkedProcExit(ctx context.Context, mod api.Module, stack []uint64) {
	code := uint32(stack[0])
	inst := instanceOf(ctx)
	if inst == nil || inst.cur == nil || inst.snap == nil {
		park.Exit(ctx, mod, code)
	}
	j := inst.cur
	memory := mod.Memory()
	f := inst.facts(j, memory)
	f.Ending, f.ExitCode = jsguest.EndExit, code
	keep := code == 0 && f.CanaryIntact && !f.MemoryRefused && f.Started && f.Record.Settled() &&
		inst.memoryParkable(memory) &&
		!inst.worn() &&
		!inst.seat.Unexpected() && !j.r.WallClockExpired() && inst.ctx.Err() == nil
	if j.finish() {
		keep = false
	}
	inst.cur = nil
	inst.stdin = nil
	// Back in the pool before the run's caller learns its result, so that
	// a caller's next run finds this instance parked.
	keep = keep && inst.pool != nil && inst.pool.Put(inst)
	if !keep && inst.pool != nil {
		inst.pool.Leaving(inst) // the replacement is booting before the caller's next run
	}
	inst.deliver(j, f)
	if !keep {
		park.Exit(ctx, mod, code)
	}
	next := inst.wait()
	if next == nil {
		park.Exit(ctx, mod, code)
	}
	inst.resume(mod, next)
}
