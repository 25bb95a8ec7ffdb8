package rewrite

import (
	"errors"
	"strings"
	"testing"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
)

// TestStaticTablesRefuses: a module that could change a table after
// instantiation is refused, naming what could; one that only reads its
// table is accepted.
func TestStaticTablesRefuses(t *testing.T) {
	ref := []byte{opI32Const, 0, 0xd0, 0x70} // index 0, ref.null func
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"table.set", append(append([]byte{}, ref...), opTableSet, 0, opEnd)},
		{"table.grow", []byte{0xd0, 0x70, opI32Const, 1, opPrefixFC, fcTableGrow, 0, 0x1a, opEnd}},
		{"table.fill", append(append([]byte{}, ref...), opI32Const, 1, opPrefixFC, fcTableFill, 0, opEnd)},
		{"table.copy", []byte{opI32Const, 0, opI32Const, 0, opI32Const, 1, opPrefixFC, fcTableCopy, 0, 0, opEnd}},
		{"table.init", []byte{opI32Const, 0, opI32Const, 0, opI32Const, 1, opPrefixFC, fcTableInit, 0, 0, opEnd}},
		{"elem.drop", []byte{opPrefixFC, 13, 0, opEnd}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(module(tc.body...))
			if err != nil {
				t.Fatal(err)
			}
			err = StaticTables(m)
			if !errors.Is(err, ErrTableWritten) || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("StaticTables = %v, want ErrTableWritten naming %s", err, tc.name)
			}
		})
	}
	// Reading a table, and calling through it, is not writing it.
	for name, wasm := range map[string][]byte{"park.wasm": parkWasm, "guest.wasm": guestWasm, "QuickJS": quickjswasi.QuickJSWASM} {
		m, err := Decode(wasm)
		if err != nil {
			t.Fatal(err)
		}
		if err := StaticTables(m); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	m, err := Decode(module(opI32Const, 0, 0x25, 0, 0x1a, opPrefixFC, 16, 0, 0x1a, opEnd)) // table.get, table.size
	if err != nil {
		t.Fatal(err)
	}
	if err := StaticTables(m); err != nil {
		t.Errorf("table.get and table.size: %v", err)
	}
}

// TestStaticTablesRefusesSharedTables: a table another module or the
// host can reach (imported or exported) is refused.
func TestStaticTablesRefusesSharedTables(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m *Module)
		want string
	}{
		{"imported", func(m *Module) {
			m.Imports = append(m.Imports, Import{Module: "env", Name: "table", Kind: KindTable, Desc: []byte{0x70, 0, 1}})
		}, "imports table env.table"},
		{"exported", func(m *Module) {
			m.Exports = append(m.Exports, Export{Name: "table", Kind: KindTable, Index: 0})
		}, `exports table 0 as "table"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(parkWasm)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(m)
			err = StaticTables(m)
			if !errors.Is(err, ErrTableWritten) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("StaticTables = %v, want ErrTableWritten saying %q", err, tc.want)
			}
		})
	}
}

// TestStaticTablesAfterRewrite: the preemption pass charges table
// operations but adds none, so a module the proof accepts is accepted
// after the passes a parked host applies, and a refused one stays
// refused through RewriteWith.
func TestStaticTablesAfterRewrite(t *testing.T) {
	if _, err := RewriteWith(quickjswasi.QuickJSWASM, ParkReadPass, PreemptPass, ExportGlobalsPass, StaticTablesPass); err != nil {
		t.Fatal(err)
	}
	body := []byte{opI32Const, 0, 0xd0, 0x70, opTableSet, 0, opEnd}
	if _, err := RewriteWith(module(body...), ParkReadPass, PreemptPass, ExportGlobalsPass, StaticTablesPass); !errors.Is(err, ErrTableWritten) {
		t.Fatalf("RewriteWith of a module with table.set = %v, want ErrTableWritten", err)
	}
}
