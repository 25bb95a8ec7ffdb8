package quickjs

import (
	"errors"

	"github.com/tetratelabs/wazero/api"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// Parked mode's globals: the module's mutable globals (__stack_pointer,
// the stop check's budget, and any a pass adds), saved at the park point
// and written back before every run. The export-globals pass exports
// every one of them (internal/wasm/rewrite, last of the passes that add
// globals), so the host reaches them through wazero's public API.

// exportedGlobals returns the module's mutable globals, in the order of
// their reserved export names.
func exportedGlobals(mod api.Module) ([]api.MutableGlobal, error) {
	var out []api.MutableGlobal
	for k := 0; ; k++ {
		g := mod.ExportedGlobal(wasmrewrite.GlobalExportName(k))
		if g == nil {
			break
		}
		mg, ok := g.(api.MutableGlobal)
		if !ok {
			return nil, errors.New("quickjs: parked mode: an exported global of the module is not mutable")
		}
		out = append(out, mg)
	}
	if len(out) == 0 { // QuickJS has its stack pointer at least
		return nil, errors.New("quickjs: parked mode: the module exports no mutable global (not rewritten for parked mode)")
	}
	return out, nil
}

// saveGlobals returns the values of gs.
func saveGlobals(gs []api.MutableGlobal) []uint64 {
	out := make([]uint64, len(gs))
	for i, g := range gs {
		out[i] = g.Get()
	}
	return out
}

// restoreGlobals writes back values returned by saveGlobals.
func restoreGlobals(gs []api.MutableGlobal, vals []uint64) {
	for i, g := range gs {
		g.Set(vals[i])
	}
}
