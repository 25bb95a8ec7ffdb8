package starlarkwasm

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// The host modules of parked instances: WASI with fd_read (the park
// point, then the run's stdin) and proc_exit (the end of a run, and the
// next park) replaced, ENOSYS for every import outside the expected set,
// and the stop check of the instance's current run.

// WASI errno values (wasi_snapshot_preview1).
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoIO      = 29
	errnoNosys   = 52
)

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
	hb := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(hb)
	i32 := api.ValueTypeI32
	hb.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(parkedFdRead), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export("fd_read")
	hb.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(parkedProcExit), []api.ValueType{i32}, nil).
		Export("proc_exit")
	for _, f := range refusedImports(compiled) {
		_, name, _ := f.Import()
		hb.NewFunctionBuilder().
			WithGoModuleFunction(refuse(len(f.ResultTypes()) > 0), f.ParamTypes(), f.ResultTypes()).
			Export(name)
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		return err
	}
	i32s := []api.ValueType{i32}
	_, err := rt.NewHostModuleBuilder(wasmrewrite.PreemptModule).
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(parkedStopCheck), i32s, i32s).
		Export(wasmrewrite.PreemptName).
		Instantiate(ctx)
	return err
}

// refusedImports are the WASI functions compiled imports outside the
// expected set, fd_read and proc_exit: each is served by refuse.
func refusedImports(compiled wazero.CompiledModule) []api.FunctionDefinition {
	var out []api.FunctionDefinition
	seen := map[string]bool{}
	for _, f := range compiled.ImportedFunctions() {
		module, name, _ := f.Import()
		if module != wasi_snapshot_preview1.ModuleName || expectedWASI[name] || name == "fd_read" || name == "proc_exit" || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, f)
	}
	return out
}

// refuse is a WASI function outside the expected set: it marks the
// instance (which ends after its run) and answers ENOSYS when the
// function has a result.
func refuse(hasResult bool) api.GoModuleFunc {
	return func(ctx context.Context, _ api.Module, stack []uint64) {
		if inst := instanceOf(ctx); inst != nil {
			inst.unexpected.Store(true)
		}
		if hasResult {
			stack[0] = errnoNosys
		}
	}
}

type instanceKey struct{}

func instanceOf(ctx context.Context) *instance {
	inst, _ := ctx.Value(instanceKey{}).(*instance)
	return inst
}

// exit ends the instance from inside a host function, as proc_exit does.
func exit(ctx context.Context, mod api.Module, code uint32) {
	_ = mod.CloseWithExitCode(ctx, code)
	panic(sys.NewExitError(code))
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
		stack[0] = errnoBadf
		return
	}
	if int32(stack[0]) != 0 {
		inst.unexpected.Store(true)
		stack[0] = errnoBadf
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
		inst.unexpected.Store(true)
		stack[0] = errnoBadf
		return
	}
	stack[0] = readInto(mod.Memory(), j.stdin, uint32(stack[1]), uint32(stack[2]), uint32(stack[3]))
}

// readInto serves a read of stdin from r, as wazero's fd_read serves one
// from an io.Reader.
func readInto(memory api.Memory, r io.Reader, iovs, count, resultNread uint32) uint64 {
	iovsBuf, ok := memory.Read(iovs, count<<3)
	if !ok {
		return errnoFault
	}
	var nread uint32
	for pos := uint32(0); pos < count<<3; pos += 8 {
		off := binary.LittleEndian.Uint32(iovsBuf[pos:])
		l := binary.LittleEndian.Uint32(iovsBuf[pos+4:])
		if l == 0 {
			continue
		}
		b, ok := memory.Read(off, l)
		if !ok {
			return errnoFault
		}
		n, err := r.Read(b)
		nread += uint32(n)
		if err != nil && err != io.EOF {
			return errnoIO
		}
		if n < int(l) {
			break
		}
	}
	if !memory.WriteUint32Le(resultNread, nread) {
		return errnoFault
	}
	return errnoSuccess
}

// parkedProcExit is proc_exit of a parked instance: it ends the run, and
// parks the instance again when the run ended as expected (park.go).
func parkedProcExit(ctx context.Context, mod api.Module, stack []uint64) {
	code := uint32(stack[0])
	inst := instanceOf(ctx)
	if inst == nil || inst.cur == nil || inst.snap == nil {
		exit(ctx, mod, code)
	}
	inst.exited(ctx, mod, code)
}
