package rewrite

import (
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// TestExportGlobals: every mutable global, the one the preemption pass
// adds included, is exported under its reserved name, in index order,
// and writing it through the export is what the module sees; immutable
// globals are not exported.
func TestExportGlobals(t *testing.T) {
	h := &parkHost{answer: func(context.Context) uint32 { return 0 }}
	m, err := Decode(parkWasm)
	if err != nil {
		t.Fatal(err)
	}
	if err := Preempt(m); err != nil {
		t.Fatal(err)
	}
	if err := ExportGlobals(m); err != nil {
		t.Fatal(err)
	}
	var want []uint32
	for i, g := range m.Globals {
		if g.Mutable {
			want = append(want, m.ImportedGlobals()+uint32(i))
		}
	}
	var got []uint32
	for _, e := range m.Exports {
		if e.Kind == KindGlobal {
			if e.Name != GlobalExportName(len(got)) {
				t.Fatalf("export %q, want %q", e.Name, GlobalExportName(len(got)))
			}
			got = append(got, e.Index)
		}
	}
	if len(want) != 3 || len(got) != len(want) {
		t.Fatalf("exported globals %v, want the mutable ones %v (count, wide and the budget)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("exported globals %v, want %v", got, want)
		}
	}

	// Through wazero's public API: read, write, and the module sees it.
	mod := instantiatePark(t, h, ExportGlobalsPass)
	count, ok := mod.ExportedGlobal(GlobalExportName(0)).(api.MutableGlobal)
	if !ok || count.Get() != 5 {
		t.Fatalf("%s is %v, want the mutable global count (5)", GlobalExportName(0), mod.ExportedGlobal(GlobalExportName(0)))
	}
	wide, ok := mod.ExportedGlobal(GlobalExportName(1)).(api.MutableGlobal)
	if !ok || wide.Type() != api.ValueTypeI64 || wide.Get() != 9 {
		t.Fatalf("%s is not the i64 global wide (9)", GlobalExportName(1))
	}
	if mod.ExportedGlobal(GlobalExportName(2)) != nil {
		t.Fatal("an immutable global was exported")
	}
	count.Set(41)
	if _, err := mod.ExportedFunction("bump").Call(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, _ := mod.ExportedFunction("count").Call(context.Background()); r[0] != 42 || wide.Get() != 10 {
		t.Fatalf("after a write of 41 and a bump: count %d, wide %d; want 42 and 10", r[0], wide.Get())
	}
}

// TestExportGlobalsImported: an imported mutable global is exported too
// (it is state the module can change), in index order before the
// defined ones; an imported immutable one is not.
func TestExportGlobalsImported(t *testing.T) {
	m, err := Decode(parkWasm)
	if err != nil {
		t.Fatal(err)
	}
	m.Imports = append(m.Imports,
		Import{Module: "env", Name: "g", Kind: KindGlobal, Desc: []byte{I32, 1}},
		Import{Module: "env", Name: "k", Kind: KindGlobal, Desc: []byte{I32, 0}})
	if err := ExportGlobals(m); err != nil {
		t.Fatal(err)
	}
	var got []uint32
	for _, e := range m.Exports {
		if e.Kind == KindGlobal {
			got = append(got, e.Index)
		}
	}
	// Global 0 is the imported mutable one, 1 the imported constant, 2
	// count, 3 one (immutable), 4 wide.
	if len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 4 {
		t.Fatalf("exported globals %v, want [0 2 4]", got)
	}
}

// TestExportGlobalsRefusesTwice: a module that uses the reserved names
// already is refused, so that no export is ever shadowed.
func TestExportGlobalsRefusesTwice(t *testing.T) {
	once, err := RewriteWith(parkWasm, ExportGlobalsPass)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RewriteWith(once, ExportGlobalsPass); !errors.Is(err, errGlobalsExported) {
		t.Fatalf("second ExportGlobals = %v, want errGlobalsExported", err)
	}
}

// TestParkedPassesValidate rewrites every module of the corpus with the
// park-read and export-globals passes (after the preemption pass, as a
// parked host does) and has wazero validate the result: it validates
// exactly when the original does.
func TestParkedPassesValidate(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	for name, wasm := range corpus(t) {
		out, err := RewriteWith(wasm, ParkReadPass, PreemptPass, ExportGlobalsPass)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		_, origErr := rt.CompileModule(ctx, wasm)
		_, err = rt.CompileModule(ctx, out)
		switch {
		case origErr != nil && err == nil:
			t.Errorf("%s: the original does not validate (%v), but the rewritten one does", name, origErr)
		case origErr == nil && err != nil:
			t.Errorf("%s: the rewritten module does not validate: %v", name, err)
		}
	}
}
