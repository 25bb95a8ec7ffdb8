package quickjs

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
)

// Parked mode's WASI overrides: fd_read (the park point, then the run's
// stdin), proc_exit (the end of a run, and the next park) and ENOSYS for
// every import outside the expected set.

// WASI errno values (wasi_snapshot_preview1).
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoIO      = 29
	errnoNosys   = 52
)

// expectedWASI are the WASI functions a run may call besides fd_read and
// proc_exit, served by wazero's own implementation: none of them changes
// state that a restore does not reset (fd_write goes to the run's own
// buffers, the clocks and the random source are reset on restore).
var expectedWASI = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_res_get": true, "clock_time_get": true, "random_get": true, "sched_yield": true,
	"fd_fdstat_get": true, "fd_prestat_get": true, "fd_prestat_dir_name": true, "fd_write": true,
}

// instantiateParkedWASI instantiates the host module wasi_snapshot_preview1
// of parked mode: wazero's own WASI functions, with fd_read and proc_exit
// replaced by the parking ones, and every other function the module
// imports replaced by one that answers ENOSYS and marks the run
// unexpected (so its instance is discarded).
func instantiateParkedWASI(ctx context.Context, rt wazero.Runtime, compiled wazero.CompiledModule) error {
	hb := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(hb)
	i32 := api.ValueTypeI32
	hb.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(parkedFdRead), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export("fd_read")
	hb.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(parkedProcExit), []api.ValueType{i32}, nil).
		Export("proc_exit")
	for _, f := range compiled.ImportedFunctions() {
		module, name, _ := f.Import()
		if module != wasi_snapshot_preview1.ModuleName || expectedWASI[name] || name == "fd_read" || name == "proc_exit" {
			continue
		}
		results := f.ResultTypes()
		hb.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
				if inst := instanceOf(ctx); inst != nil {
					inst.unexpected.Store(true)
				}
				if len(results) > 0 {
					stack[0] = errnoNosys
				}
			}), f.ParamTypes(), results).
			Export(name)
	}
	_, err := hb.Instantiate(ctx)
	return err
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

// parkedFdRead is fd_read in parked mode. The first read of stdin is the
// park point; the read the guest repeats after a restore takes the next
// run's snapshot (park.go); every read but the first is served from the
// run's payload.
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
		inst.parkPoint(ctx, mod) // does not return
	}
	if inst.retaking {
		inst.retake(ctx) // the read repeated at the park point, after a restore
	}
	if inst.stdin == nil {
		stack[0] = errnoBadf
		return
	}
	stack[0] = inst.readStdin(mod.Memory(), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]))
}

// readStdin serves a read of stdin from the run's payload, as wazero's
// fd_read serves one from an io.Reader.
func (inst *instance) readStdin(memory api.Memory, iovs, count, resultNread uint32) uint64 {
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
		n, err := inst.stdin.Read(b)
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

// parkedProcExit is proc_exit in parked mode: it ends the run, and parks
// the instance again when the run ended as expected.
func parkedProcExit(ctx context.Context, mod api.Module, stack []uint64) {
	code := uint32(stack[0])
	inst := instanceOf(ctx)
	if inst == nil || inst.cur == nil || inst.snap == nil {
		exit(ctx, mod, code)
	}
	j := inst.cur
	memory := mod.Memory()
	f := inst.facts(j, memory)
	f.Ending, f.ExitCode = jsguest.EndExit, code
	keep := code == 0 && f.CanaryIntact && !f.MemoryRefused && f.Started && f.Record.Settled() &&
		inst.memoryParkable(memory) &&
		!inst.worn() &&
		!inst.unexpected.Load() && !j.r.WallClockExpired() && inst.ctx.Err() == nil
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
		exit(ctx, mod, code)
	}
	next := inst.wait()
	if next == nil {
		exit(ctx, mod, code)
	}
	inst.resume(mod, next)
}
