package park

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// Parked mode's WASI: wazero's own functions, with fd_read (the park
// point, then the run's stdin) and proc_exit (the end of a run, and the
// next park) the engine's, and ENOSYS for every import outside the set
// the engine expects.

// WASI errno values (wasi_snapshot_preview1).
const (
	ErrnoSuccess = 0
	ErrnoBadf    = 8
	ErrnoFault   = 21
	ErrnoIO      = 29
	ErrnoNosys   = 52
)

// WASI is the wasi_snapshot_preview1 host module of an engine's parked
// instances of type I (runs J, facts F), with fd_read and proc_exit
// those of their [Core].
type WASI[I Guest[J, F], J comparable, F any] struct {
	// Expected are the functions a run may call besides fd_read and
	// proc_exit, served by wazero's own implementation; the engine says
	// why none changes state a restore does not put back.
	Expected map[string]bool
}

// Instantiate instantiates the module in rt for the imports of the
// module wasm. It reads only the module's imports (rewrite.Imports), so
// it can run while wasm compiles.
func (w WASI[I, J, F]) Instantiate(ctx context.Context, rt wazero.Runtime, wasm []byte) error {
	refused, err := w.Refused(wasm)
	if err != nil {
		return err
	}
	hb := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(hb)
	i32 := api.ValueTypeI32
	hb.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(fdRead[I, J, F]), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export("fd_read")
	hb.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(procExit[I, J, F]), []api.ValueType{i32}, nil).
		Export("proc_exit")
	for _, f := range refused {
		hb.NewFunctionBuilder().
			WithGoModuleFunction(w.refuse(len(f.Results) > 0), f.Params, f.Results).
			Export(f.Name)
	}
	_, err = hb.Instantiate(ctx)
	return err
}

// RefusedFunc is a WASI function a module imports that parked mode
// refuses: its name and signature.
type RefusedFunc struct {
	Name            string
	Params, Results []api.ValueType
}

// Refused are the WASI functions the module wasm imports outside the
// expected set, fd_read and proc_exit: each answers ENOSYS and marks its
// instance.
func (w WASI[I, J, F]) Refused(wasm []byte) ([]RefusedFunc, error) {
	imports, types, err := rewrite.Imports(wasm)
	if err != nil {
		return nil, fmt.Errorf("park: the module's imports: %w", err)
	}
	var out []RefusedFunc
	seen := map[string]bool{}
	for _, im := range imports {
		if im.Kind != rewrite.KindFunc || im.Module != wasi_snapshot_preview1.ModuleName ||
			w.Expected[im.Name] || im.Name == "fd_read" || im.Name == "proc_exit" || seen[im.Name] {
			continue
		}
		seen[im.Name] = true
		t := types[im.Type]
		out = append(out, RefusedFunc{Name: im.Name, Params: t.Params, Results: t.Results})
	}
	return out, nil
}

// refuse is a WASI function outside the expected set: it marks the
// instance the call serves (Seat.MarkUnexpected), which then ends after
// its run.
func (w WASI[I, J, F]) refuse(hasResult bool) api.GoModuleFunc {
	return func(ctx context.Context, _ api.Module, stack []uint64) {
		if c := coreOf[I](ctx); c != nil {
			c.seat.MarkUnexpected()
		}
		if hasResult {
			stack[0] = ErrnoNosys
		}
	}
}

// ReadInto serves a guest's read of stdin (fd_read's iovecs at iovs,
// count of them, the count read written at resultNread) from r, as
// wazero's fd_read serves one from an io.Reader, and returns the errno.
func ReadInto(memory api.Memory, r io.Reader, iovs, count, resultNread uint32) uint64 {
	iovsBuf, ok := memory.Read(iovs, count<<3)
	if !ok {
		return ErrnoFault
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
			return ErrnoFault
		}
		n, err := r.Read(b)
		nread += uint32(n)
		if err != nil && err != io.EOF {
			return ErrnoIO
		}
		if n < int(l) {
			break
		}
	}
	if !memory.WriteUint32Le(resultNread, nread) {
		return ErrnoFault
	}
	return ErrnoSuccess
}

// Exit ends the instance from inside a host function, as proc_exit
// does; it does not return.
func Exit(ctx context.Context, mod api.Module, code uint32) {
	_ = mod.CloseWithExitCode(ctx, code)
	panic(sys.NewExitError(code))
}

// instanceKey is the context key of the instance a host function serves
// (its Core).
type instanceKey struct{}
