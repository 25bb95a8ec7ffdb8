package starlark

import (
	"errors"
	"fmt"

	sl "go.starlark.net/starlark"
	slstruct "go.starlark.net/starlarkstruct"

	"github.com/sandbank/sandbank/internal/runfiles"
)

// This file gives a script the run's files (docs/design.md, "Files"): the
// predeclared module files, whose read, write and list relay to a
// [FileStore] (the run's runfiles.Set in process; the host, through the
// guest's relay, in starlark-wasm and starlark-native), which checks
// names and bounds. A write past a bound ends the run with LimitFiles:
// the thread is cancelled, so the script cannot go on. Every other
// failure is an error of the script (Starlark has no try).

// FileStore is what the files module of a run reads and writes: a run's
// runfiles.Set, or a relay to the host that holds one. Write reports
// runfiles.ErrLimit when the write would take the run past a bound.
type FileStore interface {
	Read(name string) ([]byte, error)
	List() []string
	Write(name string, data []byte) error
}

// filesModule is the predeclared files of run r over store.
func (r *run) filesModule(store FileStore) *slstruct.Module {
	read := func(_ *sl.Thread, b *sl.Builtin, args sl.Tuple, kwargs []sl.Tuple) (sl.Value, error) {
		var name string
		var asBytes bool
		if err := sl.UnpackArgs(b.Name(), args, kwargs, "name", &name, "bytes?", &asBytes); err != nil {
			return nil, err
		}
		data, err := store.Read(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
		if asBytes {
			return sl.Bytes(data), nil
		}
		return sl.String(runfiles.Text(data)), nil
	}
	write := func(_ *sl.Thread, b *sl.Builtin, args sl.Tuple, kwargs []sl.Tuple) (sl.Value, error) {
		var name string
		var data sl.Value
		if err := sl.UnpackArgs(b.Name(), args, kwargs, "name", &name, "data", &data); err != nil {
			return nil, err
		}
		var bs []byte
		switch d := data.(type) {
		case sl.String:
			bs = []byte(d)
		case sl.Bytes:
			bs = []byte(d)
		default:
			return nil, fmt.Errorf("%s: the data must be a str or bytes, not %s", b.Name(), data.Type())
		}
		err := store.Write(name, bs)
		if errors.Is(err, runfiles.ErrLimit) {
			r.cause.CompareAndSwap(causeNone, causeFiles)
			r.thread.Cancel("files past their bounds")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
		return sl.None, nil
	}
	list := func(_ *sl.Thread, b *sl.Builtin, args sl.Tuple, kwargs []sl.Tuple) (sl.Value, error) {
		if err := sl.UnpackArgs(b.Name(), args, kwargs); err != nil {
			return nil, err
		}
		names := store.List()
		vs := make([]sl.Value, len(names))
		for i, n := range names {
			vs[i] = sl.String(n)
		}
		return sl.NewList(vs), nil
	}
	m := &slstruct.Module{Name: "files", Members: sl.StringDict{
		"read":  sl.NewBuiltin("files.read", read),
		"write": sl.NewBuiltin("files.write", write),
		"list":  sl.NewBuiltin("files.list", list),
	}}
	m.Freeze()
	return m
}
