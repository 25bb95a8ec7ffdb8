package starlarkwasm

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// The host modules of parked instances: WASI with fd_read (the park
// point, then the run's stdin) and proc_exit (the end of a run, and the
// next park) internal/wasm/park's, ENOSYS for every import outside the
// expected set, and the stop check of the instance's current run.

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

// parkedWASI is parked instances' wasi_snapshot_preview1.
var parkedWASI = park.WASI[*instance, *job, facts]{Expected: expectedWASI}

// instantiateParkedHost instantiates, in rt, the host modules the module
// wasm imports, for parked instances.
func instantiateParkedHost(ctx context.Context, rt wazero.Runtime, wasm []byte) error {
	if err := parkedWASI.Instantiate(ctx, rt, wasm); err != nil {
		return fmt.Errorf("starlarkwasm: WASI: %w", err)
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
	inst, _ := park.InstanceOf[*instance, *job, facts](ctx)
	return inst
}

// parkedStopCheck is the stop check (wasmhost.StopCheck) with the
// context of the instance's current run, or of the instance itself while
// it boots for none: a run that is stopped ends its instance.
func parkedStopCheck(ctx context.Context, stack []uint64) {
	if inst := instanceOf(ctx); inst != nil {
		if j := inst.Cur; j != nil {
			ctx = j.ctx
		}
	}
	wasmhost.StopCheck(ctx, stack)
}
