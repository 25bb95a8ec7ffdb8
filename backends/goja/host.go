package goja

import (
	"context"
	"fmt"

	js "github.com/dop251/goja"

	"github.com/sandbank/sandbank/spi"
)

// This file gives a script its host functions (SPI 1.1): the global host,
// whose every member is a function that relays to the effect's broker and
// returns a promise. The broker checks names, sizes and counts; this file
// only converts. A call blocks the script while the host answers, so calls
// are made one at a time, in the script's order, and the promise is
// settled when the function returns: `await host.orders({...})` reads its
// value at the next job.

// hostObject is the global host: any string member but "then" is a host
// function of that name (the broker refuses names it does not know), so
// that `await host` is host itself. It has no own keys and refuses writes.
type hostObject struct {
	r    *run
	ctx  context.Context
	host spi.Host
	// errorCtor and typeError are the constructors captured before the
	// script ran, so a script that replaces Error cannot change what a
	// failed call rejects with.
	errorCtor, typeError, rangeError js.Value
	maxNesting                       int
	// fns caches the function of each name read, up to maxCachedHostFns
	// names (a script reading endless names gets fresh functions).
	fns map[string]js.Value
}

// maxCachedHostFns bounds hostObject.fns.
const maxCachedHostFns = 64

func (h *hostObject) Get(key string) js.Value {
	if key == "then" {
		return nil
	}
	if f, ok := h.fns[key]; ok {
		return f
	}
	f := h.r.rt.ToValue(func(call js.FunctionCall) js.Value { return h.call(key, call) })
	if len(h.fns) < maxCachedHostFns {
		h.fns[key] = f
	}
	return f
}

func (h *hostObject) Set(string, js.Value) bool { return false }
func (h *hostObject) Has(key string) bool       { return key != "then" }
func (h *hostObject) Delete(string) bool        { return false }
func (h *hostObject) Keys() []string            { return nil }

// installHost makes the global host relay to broker with ctx; results
// nested deeper than maxNesting are refused (MaxNesting).
func (r *run) installHost(ctx context.Context, broker spi.Host, maxNesting int) error {
	h := &hostObject{r: r, ctx: ctx, host: broker, maxNesting: maxNesting, fns: map[string]js.Value{},
		errorCtor: r.rt.Get("Error"), typeError: r.rt.Get("TypeError"), rangeError: r.rt.Get("RangeError")}
	if err := r.rt.Set("host", r.rt.NewDynamicObject(h)); err != nil {
		return fmt.Errorf("goja: installing host: %w", err)
	}
	return nil
}

// call relays one host call and returns its promise: the argument as JSON
// text (with the JSON.stringify captured before the script ran), the
// result decoded as the input is (in Go, depth-bounded), an error as a
// rejection with an Error whose message is the broker's text.
func (h *hostObject) call(name string, call js.FunctionCall) js.Value {
	rt := h.r.rt
	promise, resolve, reject := rt.NewPromise()
	fail := func(ctor js.Value, msg string) js.Value {
		obj, err := rt.New(ctor, rt.ToValue(msg))
		if err != nil {
			panic(err)
		}
		_ = reject(obj)
		return rt.ToValue(promise)
	}
	if len(call.Arguments) > 1 {
		return fail(h.typeError, "host."+name+" takes one argument")
	}
	args := "null"
	if a := call.Argument(0); !js.IsUndefined(a) {
		text, err := h.r.stringify(js.Undefined(), a)
		if err != nil {
			if ex, ok := asException(err); ok {
				_ = reject(ex.Value())
				return rt.ToValue(promise)
			}
			panic(err) // an interrupt: the run is stopping
		}
		if text == nil || js.IsUndefined(text) {
			return fail(h.typeError, "host."+name+": the argument cannot be represented as JSON")
		}
		args = text.String()
	}
	res, err := h.host.Call(h.ctx, name, []byte(args))
	if err != nil {
		return fail(h.errorCtor, err.Error())
	}
	if jsonNesting(res, h.maxNesting) > h.maxNesting {
		return fail(h.rangeError, fmt.Sprintf("host.%s: the result nests deeper than %d levels", name, h.maxNesting))
	}
	v, err := decodeJSON(rt, string(res), func() bool { return h.r.cause.Load() != causeNone })
	if err != nil {
		return fail(h.errorCtor, "host."+name+": the result could not be converted")
	}
	_ = resolve(v)
	return rt.ToValue(promise)
}
