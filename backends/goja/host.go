package goja

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	js "github.com/dop251/goja"

	"github.com/sandbank/sandbank/spi"
)

// This file gives a script its host functions (SPI 1.1): the global host,
// whose every member is a function that relays to the effect's broker and
// returns a promise. The broker checks names, sizes and counts; this file
// only converts. A call returns a pending promise and the script goes on:
// the calls it issued are handed to the broker together when it has
// nothing left to do but wait (one turn of its event loop), several may
// be in flight, and each promise is settled on the run's goroutine as its
// answer arrives, in any order (see waitHost). With a broker that cannot
// start calls, a call blocks the script while the host answers.

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

	starter   spi.HostStarter // nil: calls block (the broker cannot start them)
	inflight  map[int]pendingCall
	unstarted []issued // calls the script issued since it last waited
	nextID    int
	mu        sync.Mutex    // guards arrived
	arrived   []hostAnswer  // answers not yet handed to the script
	ready     chan struct{} // signalled (never blocking) when an answer arrives
}

// pendingCall is a call in flight: its name and its promise's functions.
type pendingCall struct {
	name            string
	resolve, reject func(any) error
}

// issued is a call the script made, not yet handed to the broker.
type issued struct {
	id   int
	name string
	args json.RawMessage
}

// hostAnswer is a broker's answer to call id.
type hostAnswer struct {
	id   int
	text json.RawMessage
	err  error
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
	if hs, ok := broker.(spi.HostStarter); ok {
		h.starter, h.inflight, h.ready = hs, map[int]pendingCall{}, make(chan struct{}, 1)
	}
	r.host = h
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
	if h.starter != nil {
		id := h.nextID
		h.nextID++
		h.inflight[id] = pendingCall{name: name, resolve: resolve, reject: reject}
		h.unstarted = append(h.unstarted, issued{id: id, name: name, args: json.RawMessage(args)})
		return rt.ToValue(promise)
	}
	res, err := h.host.Call(h.ctx, name, []byte(args))
	h.answer(pendingCall{name: name, resolve: resolve, reject: reject}, res, err)
	return rt.ToValue(promise)
}

// answer settles a call's promise with the broker's answer: the result
// decoded as the input is (in Go, depth-bounded), an error as a rejection
// with an Error whose message is the broker's text.
func (h *hostObject) answer(c pendingCall, res json.RawMessage, err error) {
	rt := h.r.rt
	fail := func(ctor js.Value, msg string) {
		obj, err := rt.New(ctor, rt.ToValue(msg))
		if err != nil {
			panic(err)
		}
		_ = c.reject(obj)
	}
	if err != nil {
		fail(h.errorCtor, err.Error())
		return
	}
	if jsonNesting(res, h.maxNesting) > h.maxNesting {
		fail(h.rangeError, fmt.Sprintf("host.%s: the result nests deeper than %d levels", c.name, h.maxNesting))
		return
	}
	v, err := decodeJSON(rt, string(res), func() bool { return h.r.cause.Load() != causeNone })
	if err != nil {
		fail(h.errorCtor, "host."+c.name+": the result could not be converted")
		return
	}
	_ = c.resolve(v)
}

// deliver queues an answer for the run's goroutine. It never blocks.
func (h *hostObject) deliver(a hostAnswer) {
	h.mu.Lock()
	h.arrived = append(h.arrived, a)
	h.mu.Unlock()
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// send hands the broker the calls the script issued since it last waited,
// in order. When that is the only call in flight, it is made on this
// goroutine (spi.Host.Call: no hand-off); otherwise each is started
// (spi.HostStarter), to run concurrently.
func (h *hostObject) send() {
	if h.r.cause.Load() != causeNone {
		// A stopped run relays no more calls: its Evaluate has returned,
		// or is returning, and a call now would reach the host after the
		// run's end (waitHost's select may take an arrived answer before
		// the halt, and the script's reaction issue more calls).
		return
	}
	if len(h.unstarted) == 1 && len(h.inflight) == 1 {
		u := h.unstarted[0]
		h.unstarted = h.unstarted[:0]
		res, err := h.host.Call(h.ctx, u.name, u.args)
		h.deliver(hostAnswer{id: u.id, text: res, err: err})
		return
	}
	for _, u := range h.unstarted {
		h.starter.Start(h.ctx, u.name, u.args, func(text json.RawMessage, err error) {
			h.deliver(hostAnswer{id: u.id, text: text, err: err})
		})
	}
	clear(h.unstarted)
	h.unstarted = h.unstarted[:0]
}

// waitHost is the run's event loop for host calls: while p is pending and
// calls are in flight, it waits for answers (or the run's stop) and hands
// every answer that arrived to the script, inside one call from a
// JavaScript frame, so that the jobs they queue run before it returns. It
// returns a goja error from that call, or nil.
func (h *hostObject) waitHost(p *js.Promise) error {
	for p.State() == js.PromiseStatePending && len(h.inflight) > 0 {
		h.send()
		select {
		case <-h.ready:
		case <-h.r.halt:
			return nil
		}
		h.mu.Lock()
		batch := h.arrived
		h.arrived = nil
		h.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		body := h.r.rt.ToValue(func(js.FunctionCall) js.Value {
			for _, a := range batch {
				c, ok := h.inflight[a.id]
				if !ok {
					continue
				}
				delete(h.inflight, a.id)
				h.answer(c, a.text, a.err)
			}
			return js.Undefined()
		})
		if _, err := h.r.driver(js.Undefined(), body); err != nil {
			return err
		}
	}
	return nil
}
