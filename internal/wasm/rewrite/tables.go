package rewrite

import (
	"errors"
	"fmt"
)

// The static-tables proof.
//
// StaticTables changes nothing: it proves that the module's tables hold,
// for the whole life of an instance, exactly what instantiation put in
// them, or refuses the module. A host that restores an instance to an
// earlier point (parked mode) then has no table to save or compare. The
// proof is syntactic, over everything that can change a table:
//
//   - no body holds table.set, table.grow, table.fill, table.copy or
//     table.init (nor elem.drop, whose only observer is table.init);
//   - no table is imported or exported, so no other module, and no host
//     through the API, can reach one.
//
// Active element segments are written at instantiation, before the
// instance runs; call_indirect and table.get only read; table.size is
// constant when nothing grows a table. Decode has walked every
// instruction of every body, so none is passed over.

// StaticTablesVersion names the proof (see PreemptVersion): it changes
// whenever the proof accepts a different set of modules.
const StaticTablesVersion = "static-tables-1"

// StaticTablesPass is StaticTables as a Pass. It rewrites nothing, so it
// may run anywhere in a pass list; run it after every pass that adds
// code, so that it checks the module as it will run.
var StaticTablesPass = Pass{Name: StaticTablesVersion, Apply: StaticTables}

// ErrTableWritten is wrapped by StaticTables's refusal of a module whose
// tables could change after instantiation.
var ErrTableWritten = errors.New("rewrite: the module can change a table after instantiation")

// opTableSet is table.set (table.get is 0x25).
const opTableSet = 0x26

// StaticTables proves that no table of m is ever written after
// instantiation, or returns an error wrapping ErrTableWritten that names
// the first function or import/export that could write one.
func StaticTables(m *Module) error {
	for _, im := range m.Imports {
		if im.Kind == KindTable {
			return fmt.Errorf("%w: it imports table %s.%s", ErrTableWritten, im.Module, im.Name)
		}
	}
	for _, e := range m.Exports {
		if e.Kind == KindTable {
			return fmt.Errorf("%w: it exports table %d as %q", ErrTableWritten, e.Index, e.Name)
		}
	}
	nImp := m.ImportedFuncs()
	for i, b := range m.Code {
		err := walk(b.Code, func(in instr) error {
			if name := tableWrite(in); name != "" {
				return fmt.Errorf("%w: function %d has %s at byte %d of its body", ErrTableWritten, int(nImp)+i, name, in.start)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// tableWrite names the instruction if it can change a table (or an
// element segment), and is empty otherwise.
func tableWrite(in instr) string {
	if in.op == opTableSet {
		return "table.set"
	}
	if in.op != opPrefixFC {
		return ""
	}
	switch in.sub {
	case fcTableInit:
		return "table.init"
	case 13:
		return "elem.drop"
	case fcTableCopy:
		return "table.copy"
	case fcTableGrow:
		return "table.grow"
	case fcTableFill:
		return "table.fill"
	}
	return ""
}
