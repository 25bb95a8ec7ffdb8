package goja

import (
	"errors"
	"reflect"

	js "github.com/dop251/goja"

	"github.com/sandbank/sandbank/internal/runfiles"
)

// This file gives a script the run's files (docs/design.md, "Files"): the
// global files, a frozen object behind a non-writable binding, whose
// read, write and list relay to the run's runfiles.Set, which checks
// names and bounds. A write past a bound stops the run (causeFiles), so
// the script cannot catch it; every other failure is a catchable Error
// (a TypeError for data of the wrong type).

// typeBytes is the type a Uint8Array (or Uint8ClampedArray) exports: a
// view of its bytes, not a copy.
var typeBytes = reflect.TypeOf([]byte(nil))

// installFiles defines the global files of run r over set.
func (r *run) installFiles(set *runfiles.Set) error {
	rt := r.rt
	errorCtor, typeError := rt.Get("Error"), rt.Get("TypeError")
	uint8Ctor := rt.Get("Uint8Array")
	throw := func(ctor js.Value, msg string) {
		obj, err := rt.New(ctor, rt.ToValue(msg))
		if err != nil {
			panic(err)
		}
		panic(obj)
	}
	name := func(method string, call js.FunctionCall) string {
		v := call.Argument(0)
		if _, ok := v.Export().(string); !ok {
			throw(typeError, "files."+method+": the name must be a string")
		}
		return v.String()
	}
	read := func(call js.FunctionCall) js.Value {
		n := name("read", call)
		b, err := set.Read(n)
		if err != nil {
			throw(errorCtor, "files.read: "+err.Error())
		}
		switch mode := call.Argument(1); {
		case js.IsUndefined(mode):
			return rt.ToValue(runfiles.Text(b))
		case mode.Export() == "bytes":
			buf := rt.NewArrayBuffer(append([]byte(nil), b...))
			arr, err := rt.New(uint8Ctor, rt.ToValue(buf))
			if err != nil {
				panic(err)
			}
			return arr
		default:
			throw(typeError, `files.read: the second argument must be "bytes" or absent`)
		}
		return nil
	}
	write := func(call js.FunctionCall) js.Value {
		n := name("write", call)
		var err error
		switch d := call.Argument(1); {
		case d.ExportType() == typeBytes:
			err = set.Write(n, d.Export().([]byte))
		default:
			s, ok := d.Export().(string)
			if !ok {
				throw(typeError, "files.write: the data must be a string or a Uint8Array")
			}
			err = set.Write(n, []byte(s))
		}
		switch {
		case errors.Is(err, runfiles.ErrLimit):
			// The interrupt stops the script at its next instruction.
			r.stop(causeFiles)
		case err != nil:
			throw(errorCtor, "files.write: "+err.Error())
		}
		return js.Undefined()
	}
	list := func(js.FunctionCall) js.Value {
		names := set.List()
		vs := make([]any, len(names))
		for i, n := range names {
			vs[i] = n
		}
		return rt.NewArray(vs...)
	}

	files := rt.NewObject()
	for _, m := range []struct {
		name   string
		length int
		fn     func(js.FunctionCall) js.Value
	}{{"read", 1, read}, {"write", 2, write}, {"list", 0, list}} {
		if err := files.DefineDataProperty(m.name, rt.ToValue(m.fn), js.FLAG_FALSE, js.FLAG_FALSE, js.FLAG_TRUE); err != nil {
			return err
		}
	}
	freeze, err := callable(rt.Get("Object").ToObject(rt).Get("freeze"))
	if err != nil {
		return err
	}
	if _, err := freeze(js.Undefined(), files); err != nil {
		return err
	}
	return rt.GlobalObject().DefineDataProperty("files", files, js.FLAG_FALSE, js.FLAG_FALSE, js.FLAG_FALSE)
}
