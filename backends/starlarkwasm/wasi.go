package starlarkwasm

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// The host modules of parked instances: WASI with fd_read (the park
// point, then the run's stdin) and proc_exit (the end of a run, and the
// next park) replaced, ENOSYS for every import outside the expected set,
// and the stop check of the instance's current run.

// expectedWASI are the WASI functions the Go guest may call besides
// fd_read and proc_exit, served by wazero's own implementation; none
// changes state a restore does not put back. The clocks and the random
// source are the instance's Replay, restored; fd_write goes to the run's
// own sinks; the rest read fixed state (the arguments, the environment,
// the descriptor table, whose flags fd_fdstat_set_flags sets the same way
// at every boot, before the park point). poll_oneoff is the Go runtime's
// sleep on its fatal path (out of memory), with clock subscriptions; the
// guest has no descriptor to wait on but stdin, which never blocks.
var expectedWASI = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_time_get": true, "random_get": true, "sched_yield": true,
	"fd_fdstat_get": true, "fd_fdstat_set_flags": true, "fd_prestat_get": true, "fd_prestat_dir_name": true,
	"fd_write": true, "poll_oneoff": true,
}

// instantiateParkedHost instantiates, in rt, the host modules the module
// compiled imports, for parked instances.
func instantiateParkedHost(ctx context.Context, rt wazero.Runtime, compiled wazero.CompiledModule) error {
	wasi := park.WASI[*instance]{
		Expected: expectedWASI,
		FdRead:   parkedFdRead,
		ProcExit: parkedProcExit,
	}
	if err := wasi.Instantiate(ctx, rt, compiled); err != nil {
		return err
	}
	i32s := []api.ValueType{api.ValueTypeI32}
	_, err := rt.NewHostModuleBuilder(wasmrewrite.PreemptModule).
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(parkedStopCheck), i32s, i32s).
		Export(wasmrewrite.PreemptName).
		Instantiate(ctx)
	return err
}

// instanceOf returns the instance a host function serves, or nil.
func instanceOf(ctx context.Context) *instance {
	inst, _ := park.InstanceOf[*instance](ctx)
	return inst
}

// parkedStopCheck is the stop check (wasmhost.StopCheck) with the
// context of the instance's current run, or of the instance itself while
// it boots for none: a run that is stopped ends its instance.
func parkedStopCheck(ctx context.Context, stack []uint64) {
	if inst := instanceOf(ctx); inst != nil {
		if j := inst.cur; j != nil {
			ctx = j.ctx
		}
	}
	wasmhost.StopCheck(ctx, stack)
}

// parkedFdRead is fd_read of a parked instance. The first read of stdin
// is the park point; the read the guest repeats after a restore takes the
// next run's snapshot (park.go); every read is served from the run's
// stdin.
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
		inst.parkPoint(ctx, mod) // restores, or ends the instance
		return
	}
	if inst.retaking {
		inst.retake(ctx) // the read repeated at the park point, after a restore
	}
	j := inst.cur
	if j == nil {
		inst.seat.MarkUnexpected()
		stack[0] = park.ErrnoBadf
		return
	}
	stack[0] = park.ReadInto(mod.Memory(), j.stdin, uint32(stack[1]), uint32(stack[2]), uint32(stack[3]))
}

// parkedProcExit is proc_exit of a parked instance: it ends the run, and
// parks the instance again when the run ended as expected (park.go).
func parkedProcExit(ctx context.Context, mod api.Module, stack []uint64) {
	code := uint32(stack[0])
	inst := instanceOf(ctx)
	if inst == nil || inst.cur == nil || inst.snap == nil {
		park.Exit(ctx, mod, code)
	}
	inst.exited(ctx, mod, code)
}
