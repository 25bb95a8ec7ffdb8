package quickjs

// This file is the ONLY place that reaches into wazero's unexported or
// internal state. Parked mode needs three things wazero v1.12.0 does not
// offer through its API:
//
//   - restoring one snapshot many times: a snapshot's saved native stack
//     becomes the live stack when it is restored, so the guest's next run
//     overwrites it. Parked mode keeps a pristine copy of its bytes and
//     writes them back into that same backing array (the frame pointers in
//     it are absolute addresses into it) before every restore;
//   - the module's mutable globals, which the module does not export
//     (__stack_pointer above all): read once at the park point and written
//     back before every run;
//   - the module's function tables, compared after every run with their
//     contents at the park point.
//
// wazero is pinned at v1.12.0 (go.mod). TestWazeroInternals fails loudly
// when go.mod names another version or any of this changes. In a
// consumer's build, where minimal version selection may pick a newer
// wazero, New runs a probe module through these functions first
// (internals_probe.go) and falls back to ModeFresh, saying why
// (Backend.ParkedModeError), when they do not find what they expect.
// Should a shape change escape the probe, a parked instance whose
// snapshot or module does not have the shapes below still never parks,
// and its run fails with errInternals (untyped), never with a wrong
// result.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// errInternals reports that wazero's internals are not what this file
// was written against.
var errInternals = errors.New("quickjs: parked mode: wazero's internals changed (this backend was written against wazero v1.12.0); use ModeFresh")

// snapshotStack returns the backing array of the native call stack that
// restoring s makes live again.
func snapshotStack(s experimental.Snapshot) ([]byte, error) {
	v := reflect.ValueOf(s)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: a snapshot is a %T", errInternals, s)
	}
	f := v.Elem().FieldByName("stack")
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Uint8 || f.Len() == 0 {
		return nil, fmt.Errorf("%w: no stack []byte in %T", errInternals, s)
	}
	return unsafe.Slice((*byte)(f.UnsafePointer()), f.Len()), nil
}

// moduleInternals reaches the mutable globals and the tables of one
// module instance.
type moduleInternals struct {
	getters []reflect.Value // the Value method of each mutable global
	setters []reflect.Value // the SetValue method of each mutable global
	tables  []reflect.Value // the References field of each table
}

// inspectModule finds the mutable globals and the tables of mod.
func inspectModule(mod api.Module) (*moduleInternals, error) {
	v := reflect.ValueOf(mod)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: a module is a %T", errInternals, mod)
	}
	globals := v.Elem().FieldByName("Globals")
	tables := v.Elem().FieldByName("Tables")
	if !globals.IsValid() || globals.Kind() != reflect.Slice || !tables.IsValid() || tables.Kind() != reflect.Slice {
		return nil, fmt.Errorf("%w: no Globals or Tables in %T", errInternals, mod)
	}
	m := &moduleInternals{}
	for i := range globals.Len() {
		g := globals.Index(i)
		if g.Kind() != reflect.Pointer || g.IsNil() {
			return nil, fmt.Errorf("%w: global %d", errInternals, i)
		}
		mutable := g.Elem().FieldByName("Type").FieldByName("Mutable")
		get, set := g.MethodByName("Value"), g.MethodByName("SetValue")
		if !mutable.IsValid() || mutable.Kind() != reflect.Bool || !get.IsValid() || !set.IsValid() ||
			get.Type().NumIn() != 0 || get.Type().NumOut() != 2 || set.Type().NumIn() != 2 {
			return nil, fmt.Errorf("%w: global %d has no Type.Mutable, Value or SetValue", errInternals, i)
		}
		if mutable.Bool() {
			m.getters = append(m.getters, get)
			m.setters = append(m.setters, set)
		}
	}
	for i := range tables.Len() {
		t := tables.Index(i)
		if t.Kind() != reflect.Pointer || t.IsNil() {
			return nil, fmt.Errorf("%w: table %d", errInternals, i)
		}
		refs := t.Elem().FieldByName("References")
		if !refs.IsValid() || refs.Kind() != reflect.Slice || refs.Type().Elem().Kind() != reflect.Uintptr {
			return nil, fmt.Errorf("%w: table %d has no References []uintptr", errInternals, i)
		}
		m.tables = append(m.tables, refs)
	}
	return m, nil
}

// globals returns the values of the mutable globals, two words each.
func (m *moduleInternals) globals() []uint64 {
	out := make([]uint64, 0, 2*len(m.getters))
	for _, get := range m.getters {
		r := get.Call(nil)
		out = append(out, r[0].Uint(), r[1].Uint())
	}
	return out
}

// setGlobals writes back values returned by globals.
func (m *moduleInternals) setGlobals(vals []uint64) {
	for i, set := range m.setters {
		set.Call([]reflect.Value{reflect.ValueOf(vals[2*i]), reflect.ValueOf(vals[2*i+1])})
	}
}

// tableContents returns a copy of every table's references.
func (m *moduleInternals) tableContents() [][]uintptr {
	out := make([][]uintptr, len(m.tables))
	for i, refs := range m.tables {
		out[i] = slices.Clone(references(refs))
	}
	return out
}

// tablesEqual reports whether every table still holds saved.
func (m *moduleInternals) tablesEqual(saved [][]uintptr) bool {
	if len(saved) != len(m.tables) {
		return false
	}
	for i, refs := range m.tables {
		if !slices.Equal(references(refs), saved[i]) {
			return false
		}
	}
	return true
}

// references views a References field without copying it.
func references(v reflect.Value) []uintptr {
	if v.Len() == 0 {
		return nil
	}
	return unsafe.Slice((*uintptr)(v.UnsafePointer()), v.Len())
}
