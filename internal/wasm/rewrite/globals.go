package rewrite

import (
	"errors"
	"strconv"
	"strings"
)

// The export-globals pass.
//
// ExportGlobals exports every mutable global of a module (imported or
// defined, the ones earlier passes added included) under a reserved
// name, GlobalExportName(0), GlobalExportName(1), … in the order of the
// global index space, so that a host can read and write all of the
// module's mutable state outside linear memory through its public API
// (wazero's api.MutableGlobal) instead of reaching into the engine. Its
// place is last in a pass list, after every pass that adds a global.

// GlobalExportPrefix begins the name of every export the export-globals
// pass adds; a module whose exports already use it is refused.
const GlobalExportPrefix = "sandbank.global."

// GlobalExportName is the name the export-globals pass gives the k-th
// mutable global of the module (counting mutable globals only, in the
// order of the global index space). A host finds them all by asking for
// k = 0, 1, … until a name is not exported.
func GlobalExportName(k int) string { return GlobalExportPrefix + strconv.Itoa(k) }

// ExportGlobalsVersion names the export-globals pass's output (see
// PreemptVersion).
const ExportGlobalsVersion = "export-globals-1"

// ExportGlobalsPass is ExportGlobals as a Pass.
var ExportGlobalsPass = Pass{Name: ExportGlobalsVersion, Apply: ExportGlobals}

// errGlobalsExported is returned for a module that uses the reserved
// export names already.
var errGlobalsExported = errors.New("rewrite: the module has an export named " + GlobalExportPrefix + "… already")

// ExportGlobals applies the export-globals pass to m. It refuses a module
// that exports a name beginning with GlobalExportPrefix already.
func ExportGlobals(m *Module) error {
	for _, e := range m.Exports {
		if strings.HasPrefix(e.Name, GlobalExportPrefix) {
			return errGlobalsExported
		}
	}
	k := 0
	export := func(index uint32) {
		m.Exports = append(m.Exports, Export{Name: GlobalExportName(k), Kind: KindGlobal, Index: index})
		k++
	}
	var index uint32
	for _, im := range m.Imports {
		if im.Kind != KindGlobal {
			continue
		}
		if globalImportMutable(im.Desc) {
			export(index)
		}
		index++
	}
	for _, g := range m.Globals {
		if g.Mutable {
			export(index)
		}
		index++
	}
	return nil
}

// globalImportMutable reads the mutability of an imported global's type
// (its value type, then 0 or 1; Decode checked the value type).
func globalImportMutable(desc []byte) bool {
	return len(desc) == 2 && desc[1] == 1
}
