package quickjs

import (
	"context"
	_ "embed"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// internalsProbeWasm is built from internals_probe.wat with wat2wasm
// (TestInternalsProbeMatchesItsSource fails when they drift).
//
//go:generate wat2wasm internals_probe.wat -o internals_probe.wasm
//go:embed internals_probe.wasm
var internalsProbeWasm []byte

// parkedInternals reports, once per process, whether the wazero this
// binary was built with has the internals parked mode reads
// (wazero_internals.go): nil if so, an error wrapping errInternals if
// not. New calls it for ModeParked and falls back to ModeFresh on an
// error, so a consumer whose build upgraded wazero gets a working backend
// that says why it is not parked (Backend.ParkedModeError), never a run
// that fails at run time. Tests replace it.
var parkedInternals = sync.OnceValue(probeInternals)

// probeInternals instantiates a tiny module in a runtime configured as
// the backend's, takes a snapshot in a host call and reads it and the
// module through wazero_internals.go, checking what it finds.
func probeInternals() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: the probe panicked: %v", errInternals, p)
		}
	}()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithDebugInfoEnabled(false))
	defer rt.Close(ctx)
	var snapErr error
	_, err = rt.NewHostModuleBuilder("sandbank").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, _ []uint64) {
			_, snapErr = snapshotStack(experimental.GetSnapshotter(ctx).Snapshot())
		}), nil, nil).
		Export("snapshot").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("%w: the probe's host module: %v", errInternals, err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, internalsProbeWasm, wazero.NewModuleConfig().WithName("probe").WithStartFunctions())
	if err != nil {
		return fmt.Errorf("%w: the probe module: %v", errInternals, err)
	}
	m, err := inspectModule(mod)
	if err != nil {
		return err
	}
	if len(m.getters) != 1 || len(m.tables) != 1 || len(references(m.tables[0])) != 1 {
		return fmt.Errorf("%w: the probe has %d mutable globals and %d tables, want 1 and 1", errInternals, len(m.getters), len(m.tables))
	}
	if _, err := mod.ExportedFunction("run").Call(experimental.WithSnapshotter(ctx)); err != nil {
		return fmt.Errorf("%w: the probe's run: %v", errInternals, err)
	}
	if snapErr != nil {
		return snapErr
	}
	if g := m.globals(); len(g) != 2 || g[0] != 7 {
		return fmt.Errorf("%w: the probe's global reads %v, want 7", errInternals, g)
	}
	m.setGlobals([]uint64{9, 0})
	if g := m.globals(); g[0] != 9 {
		return fmt.Errorf("%w: the probe's global did not take a write", errInternals)
	}
	return nil
}
