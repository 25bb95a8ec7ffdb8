package goja

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	js "github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/sandbank/sandbank/internal/jsfront"
	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/spi"
)

// scriptName is the file name goja gives the script in error positions.
const scriptName = "script.js"

// Why a run ended, recorded once (the first cause wins).
const (
	causeNone  int32 = iota
	causeDone        // the run finished on its own and is delivering
	causeWall        // the wall clock expired
	causeCtx         // the context was cancelled
	causeFiles       // a write went past the output files' bounds (files.go)
)

// The interrupt values: the run was asked to stop; the script's value is
// serialised and its pending promise jobs are to be dropped.
var (
	errStopped  = errors.New("goja: run stopped")
	errFinished = errors.New("goja: run finished")
)

// driverProgram calls the function it is given from a JavaScript frame.
var driverProgram = sync.OnceValue(func() *js.Program { return js.MustCompile("driver.js", "(function (body) { body(); })", true) })

// describeProgram builds, before the script runs, the function that reads
// a thrown value's name and message. It captures String first, so a script
// that replaces globals cannot change how its errors are read; every read
// is guarded, so a throwing getter yields an empty field, not an escape.
var describeProgram = sync.OnceValue(func() *js.Program {
	return js.MustCompile("describe.js", `(function () {
  var S = String;
  function field(e, k) {
    try { var v = e[k]; return typeof v === "string" ? v : undefined; } catch (_) { return undefined; }
  }
  function text(v) { try { return S(v); } catch (_) { return ""; } }
  return function (e) {
    if (e !== null && (typeof e === "object" || typeof e === "function")) {
      var m = field(e, "message");
      return [field(e, "name") || "", m === undefined ? text(e) : m];
    }
    return ["", text(e)];
  };
})()`, true)
})

// run is one evaluation: a fresh runtime and the engine functions captured
// from it before the script could replace them.
type run struct {
	rt      *js.Runtime
	script  string
	input   string
	started chan struct{} // closed as the script starts
	halt    chan struct{} // closed when the run is asked to stop
	host    *hostObject   // the global host, or nil
	files   *runfiles.Set // the run's files (files.go)
	// startedAt is when the script started (set before started is
	// closed; zero if it never did): the stats' start-up and script time.
	startedAt time.Time
	cause     atomic.Int32
	phase     atomic.Int32 // phaseRunning, phaseLeft, phaseEnded (goja.go)

	decode    func() (js.Value, error) // converts the input (input.go)
	parse     js.Callable              // the original JSON.parse
	stringify js.Callable              // the original JSON.stringify
	promise   js.Value                 // the original Promise
	resolve   js.Callable              // the original Promise.resolve
	describe  js.Callable
	driver    js.Callable
	replacer  js.Value // checks for a stop between values while stringifying
}

// newRun builds the runtime of one evaluation: clock, randomness, call
// depth, the input's guard, a console that writes to the request's log
// sink.
func (b *Backend) newRun(req spi.Request) (*run, error) {
	rt := js.New()
	r := &run{rt: rt, script: string(req.Script), input: string(req.Input), started: make(chan struct{}), halt: make(chan struct{})}
	if len(req.Input) == 0 {
		r.input = "null"
	}

	// The clock starts at FakeEpoch and advances 1 ms per reading.
	var ticks atomic.Int64
	rt.SetTimeSource(func() time.Time {
		return FakeEpoch.Add(time.Duration(ticks.Add(1)-1) * time.Millisecond)
	})
	// Math.random: the same deterministic sequence on every run.
	rng := rand.New(rand.NewPCG(RandomSeed, ^RandomSeed))
	rt.SetRandSource(rng.Float64)
	rt.SetMaxCallStackSize(b.maxCallStack)

	r.decode = func() (js.Value, error) {
		return decodeJSON(rt, r.input, func() bool { return r.cause.Load() != causeNone })
	}
	var err error
	jsonObj := rt.Get("JSON").ToObject(rt)
	if r.parse, err = callable(jsonObj.Get("parse")); err != nil {
		return nil, err
	}
	if r.stringify, err = callable(jsonObj.Get("stringify")); err != nil {
		return nil, err
	}
	r.promise = rt.Get("Promise")
	if r.resolve, err = callable(r.promise.ToObject(rt).Get("resolve")); err != nil {
		return nil, err
	}
	d, err := rt.RunProgram(describeProgram())
	if err != nil {
		return nil, fmt.Errorf("goja: building the error reader: %w", err)
	}
	if r.describe, err = callable(d); err != nil {
		return nil, err
	}
	d, err = rt.RunProgram(driverProgram())
	if err != nil {
		return nil, fmt.Errorf("goja: building the driver: %w", err)
	}
	if r.driver, err = callable(d); err != nil {
		return nil, err
	}
	r.replacer = rt.ToValue(func(call js.FunctionCall) js.Value {
		if r.cause.Load() != causeNone {
			panic(rt.NewGoError(errStopped))
		}
		return call.Argument(1)
	})
	if err := b.installGuards(r); err != nil {
		return nil, err
	}
	if err := b.guardSources(r); err != nil {
		return nil, err
	}
	// A source map comment must not make the parser read a host file
	// (goja's default loader reads any path named in the comment).
	rt.SetParserOptions(parser.WithDisableSourceMaps)
	installConsole(rt, req.Logs)
	r.files = runfiles.New(req)
	if err := r.installFiles(r.files); err != nil {
		return nil, fmt.Errorf("goja: installing files: %w", err)
	}
	return r, nil
}

// callable asserts that v is a function.
func callable(v js.Value) (js.Callable, error) {
	f, ok := js.AssertFunction(v)
	if !ok {
		return nil, errors.New("goja: the runtime lacks a built-in function")
	}
	return f, nil
}

// installGuards replaces JSON.parse and Array.prototype.flat with versions
// that refuse nesting deeper than the backend's MaxNesting (see guard.go).
func (b *Backend) installGuards(r *run) error {
	rt := r.rt
	rangeError := rt.Get("RangeError")
	isArray, err := callable(rt.Get("Array").ToObject(rt).Get("isArray"))
	if err != nil {
		return err
	}
	throwRange := func(msg string) {
		obj, err := rt.New(rangeError, rt.ToValue(msg))
		if err != nil {
			panic(err)
		}
		panic(obj)
	}
	rethrow := func(v js.Value, err error) js.Value {
		if err != nil {
			panic(err)
		}
		return v
	}
	max := b.maxNesting

	parse := r.parse
	guardedParse := func(call js.FunctionCall) js.Value {
		text := call.Argument(0).ToString()
		if jsonNesting(text.String(), max) > max {
			throwRange(fmt.Sprintf("JSON.parse: nesting deeper than %d levels", max))
		}
		return rethrow(parse(call.This, text, call.Argument(1)))
	}
	if err := replaceMethod(rt, rt.Get("JSON").ToObject(rt), "parse", 2, guardedParse); err != nil {
		return err
	}

	proto := rt.Get("Array").ToObject(rt).Get("prototype").ToObject(rt)
	flat, err := callable(proto.Get("flat"))
	if err != nil {
		return err
	}
	guardedFlat := func(call js.FunctionCall) js.Value {
		arg := call.Argument(0)
		if js.IsUndefined(arg) {
			return rethrow(flat(call.This))
		}
		depth := arg.ToFloat()
		if !(depth > float64(max)) { // NaN is depth 0
			return rethrow(flat(call.This, rt.ToValue(depth)))
		}
		// Flatten max levels; an array left over was nested deeper.
		out := rethrow(flat(call.This, rt.ToValue(max))).ToObject(rt)
		n := out.Get("length").ToInteger()
		for i := int64(0); i < n; i++ {
			v := out.Get(strconv.FormatInt(i, 10))
			if o, ok := v.(*js.Object); ok && rethrow(isArray(js.Undefined(), o)).ToBoolean() {
				throwRange(fmt.Sprintf("Array.prototype.flat: nesting deeper than %d levels", max))
			}
		}
		return out
	}
	return replaceMethod(rt, proto, "flat", 0, guardedFlat)
}

// replaceMethod installs fn as obj[name], with the name and length of the
// built-in it replaces and the same attributes (writable, configurable,
// not enumerable).
func replaceMethod(rt *js.Runtime, obj *js.Object, name string, length int, fn func(js.FunctionCall) js.Value) error {
	f := rt.ToValue(fn).ToObject(rt)
	if err := f.DefineDataProperty("name", rt.ToValue(name), js.FLAG_FALSE, js.FLAG_TRUE, js.FLAG_FALSE); err != nil {
		return fmt.Errorf("goja: naming %s: %w", name, err)
	}
	if err := f.DefineDataProperty("length", rt.ToValue(length), js.FLAG_FALSE, js.FLAG_TRUE, js.FLAG_FALSE); err != nil {
		return fmt.Errorf("goja: sizing %s: %w", name, err)
	}
	if err := obj.DefineDataProperty(name, f, js.FLAG_TRUE, js.FLAG_TRUE, js.FLAG_FALSE); err != nil {
		return fmt.Errorf("goja: installing %s: %w", name, err)
	}
	return nil
}

// stop records cause as the reason the run ends and interrupts the script.
// It reports false when the run had already ended on its own.
func (r *run) stop(cause int32) bool {
	if !r.cause.CompareAndSwap(causeNone, cause) {
		return false
	}
	r.rt.Interrupt(errStopped)
	close(r.halt)
	return true
}

// msgEngineFailed is the message of a run whose script made goja panic.
const msgEngineFailed = "goja: the engine failed on this script"

// exec converts the input, runs the script and serialises its completion
// value, on the calling goroutine. A panic in goja is recovered: once the
// script is being compiled or run, it is the script's doing (it fails the
// same way every time), a thrown InternalError; before, while the engine
// is being set up, it is an infrastructure outcome.
func (r *run) exec() (out spi.Outcome) {
	inScript := false
	defer func() {
		if p := recover(); p != nil {
			if inScript {
				out = r.settle(spi.Threw("InternalError", msgEngineFailed))
				return
			}
			out = r.settle(spi.Infrastructure("goja: the engine panicked"))
		}
	}()
	in, err := r.decode()
	if err != nil {
		if r.cause.Load() != causeNone {
			return r.stopped()
		}
		return r.settle(spi.Infrastructure("goja: the input could not be parsed as JSON"))
	}
	if err := r.rt.Set("input", in); err != nil {
		return r.settle(spi.Infrastructure("goja: the input could not be set"))
	}
	r.input = ""
	r.startedAt = time.Now()
	close(r.started)
	if r.cause.Load() != causeNone {
		return r.stopped()
	}

	// A script with top-level await runs as an async function (the
	// shared front end; the size, UTF-8 and nesting guards of Evaluate
	// bound its parse too); every other script is compiled as it is.
	inScript = true
	src, _ := jsfront.Prepare([]byte(r.script))
	r.script = ""
	prog, err := compileScript(string(src))
	if err != nil {
		if re, ok := err.(*js.CompilerReferenceError); ok {
			return r.settle(spi.Threw("ReferenceError", strings.TrimPrefix(re.Error(), "ReferenceError: ")))
		}
		return r.settle(spi.Threw("SyntaxError", strings.TrimPrefix(err.Error(), "SyntaxError: ")))
	}

	// The script runs inside a call from a JavaScript frame, so goja does
	// not run the promise jobs it queued before that call returns. A value
	// that is not thenable is serialised inside the call and an interrupt
	// then drops the jobs: no job runs. A thenable value is adopted by the
	// original Promise.resolve and the call returns normally, so goja runs
	// every job (under the same interrupts) before the promise's state is
	// read.
	var (
		value, text     js.Value
		promise         *js.Promise
		runErr, textErr error
	)
	body := r.rt.ToValue(func(js.FunctionCall) js.Value {
		value, runErr = r.rt.RunProgram(prog)
		if runErr == nil {
			promise, runErr = r.adopt(value)
		}
		if runErr != nil || promise == nil {
			defer r.rt.Interrupt(errFinished)
		}
		if runErr == nil && promise == nil {
			text, textErr = r.stringify(js.Undefined(), value, r.replacer)
		}
		return js.Undefined()
	})
	if _, err := r.driver(js.Undefined(), body); err != nil && !finished(err) {
		return r.failed(err)
	}
	switch c := r.cause.Load(); {
	case c != causeNone && c != causeDone:
		return r.stopped()
	case runErr != nil:
		return r.failed(runErr)
	case promise != nil:
		if r.host != nil {
			if err := r.host.waitHost(promise); err != nil && !finished(err) {
				return r.failed(err)
			}
			if c := r.cause.Load(); c != causeNone && c != causeDone {
				return r.stopped()
			}
		}
		return r.settled(promise)
	}
	return r.result(value, text, textErr)
}

// adopt returns the native promise that follows v when v is thenable (an
// object or a function whose then is a function), or nil. Reading then
// may run the script's getter, which may throw.
func (r *run) adopt(v js.Value) (*js.Promise, error) {
	o, ok := v.(*js.Object)
	if !ok {
		return nil, nil
	}
	var then js.Value
	if err := catch(func() { then = o.Get("then") }); err != nil {
		return nil, err
	}
	if _, ok := js.AssertFunction(then); !ok {
		return nil, nil
	}
	p, err := r.resolve(r.promise, v)
	if err != nil {
		return nil, err
	}
	promise, ok := p.Export().(*js.Promise)
	if !ok {
		return nil, errors.New("goja: Promise.resolve returned no promise")
	}
	return promise, nil
}

// catch runs f and returns the JavaScript exception it throws, if any;
// any other panic (an interrupt) goes on.
func catch(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			ex, ok := p.(*js.Exception)
			if !ok {
				panic(p)
			}
			err = ex
		}
	}()
	f()
	return nil
}

// msgNeverSettled is the message of a promise still pending once every job
// has run: nothing is left that could settle it.
const msgNeverSettled = "the script's promise never settled"

// settled maps the state of the script's promise once the job queue is
// empty: a fulfilled value is serialised (in a call of its own, after
// which the jobs it queued are dropped); a rejection reads as a thrown
// value.
func (r *run) settled(p *js.Promise) spi.Outcome {
	switch p.State() {
	case js.PromiseStateFulfilled:
		value := p.Result()
		var text js.Value
		var textErr error
		body := r.rt.ToValue(func(js.FunctionCall) js.Value {
			defer r.rt.Interrupt(errFinished)
			text, textErr = r.stringify(js.Undefined(), value, r.replacer)
			return js.Undefined()
		})
		if _, err := r.driver(js.Undefined(), body); err != nil && !finished(err) {
			return r.failed(err)
		}
		if c := r.cause.Load(); c != causeNone && c != causeDone {
			return r.stopped()
		}
		return r.result(value, text, textErr)
	case js.PromiseStateRejected:
		name, msg := r.describeValue(p.Result())
		if c := r.cause.Load(); c != causeNone && c != causeDone {
			return r.stopped() // reading the rejection ran until the clock expired
		}
		return r.settle(spi.Threw(name, msg))
	default:
		return r.settle(spi.Threw("Error", msgNeverSettled))
	}
}

// compileScript parses and compiles the script, with source maps off.
func compileScript(src string) (*js.Program, error) {
	ast, err := js.Parse(scriptName, src, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, err
	}
	return js.CompileAST(ast, false)
}

// finished reports whether err is the interrupt that drops the promise
// jobs once the script's value is serialised.
func finished(err error) bool {
	ie, ok := err.(*js.InterruptedError)
	return ok && ie.Value() == errFinished
}

// The errors goja returns from running a script. Only these three types
// are looked at, by type, never through errors.As: a *js.Exception's
// Unwrap tests the thrown value with instanceof, which runs the script's
// proxy traps, and panics on a revoked proxy.
func asException(err error) (*js.Exception, bool) {
	ex, ok := err.(*js.Exception)
	return ex, ok
}

func isInterrupt(err error) bool {
	_, ok := err.(*js.InterruptedError)
	return ok
}

func isStackOverflow(err error) bool {
	_, ok := err.(*js.StackOverflowError)
	return ok
}

// result maps the serialised completion value.
func (r *run) result(v, j js.Value, err error) spi.Outcome {
	const prefix = "the completion value cannot be represented as JSON: "
	if err != nil {
		ex, ok := asException(err)
		if !ok {
			return r.failed(err)
		}
		_, msg := r.describeValue(ex.Value())
		if c := r.cause.Load(); c != causeNone && c != causeDone {
			return r.stopped() // reading the error ran until the clock expired
		}
		if msg == "" {
			msg = "stringify failed"
		}
		return r.settle(spi.Threw("TypeError", prefix+msg))
	}
	if j == nil || js.IsUndefined(j) {
		return r.settle(spi.Threw("TypeError", prefix+"it is "+kindOf(v)))
	}
	return r.settle(spi.OK(json.RawMessage(j.String())))
}

// kindOf names a value JSON.stringify writes nothing for.
func kindOf(v js.Value) string {
	switch {
	case v == nil || js.IsUndefined(v):
		return "undefined"
	case isSymbol(v):
		return "a symbol"
	}
	if _, ok := js.AssertFunction(v); ok {
		return "a function"
	}
	return "an object whose toJSON returns nothing"
}

func isSymbol(v js.Value) bool {
	_, ok := v.(*js.Symbol)
	return ok
}

// failed maps an error from goja: a stop, a stack overflow, or a thrown
// value (a syntax error is thrown as a SyntaxError object).
func (r *run) failed(err error) spi.Outcome {
	if r.cause.Load() != causeNone && r.cause.Load() != causeDone {
		return r.stopped()
	}
	ex, isEx := asException(err)
	switch {
	case isStackOverflow(err):
		return r.settle(spi.Threw("RangeError", "Maximum call stack size exceeded"))
	case isInterrupt(err):
		// Only this backend interrupts, and only after recording a cause.
		return r.settle(spi.Infrastructure("goja: interrupted without a cause"))
	case isEx:
		name, msg := r.describeValue(ex.Value())
		if r.cause.Load() != causeNone && r.cause.Load() != causeDone {
			return r.stopped() // reading the error ran until the clock expired
		}
		return r.settle(spi.Threw(name, msg))
	default:
		return r.settle(spi.Infrastructure("goja: the engine failed"))
	}
}

// describeValue reads a thrown value's name and message with the function
// captured before the script ran.
func (r *run) describeValue(v js.Value) (name, message string) {
	if v == nil {
		return "", ""
	}
	out, err := r.describe(js.Undefined(), v)
	if err != nil {
		return "", ""
	}
	o := out.ToObject(r.rt)
	return o.Get("0").String(), o.Get("1").String()
}

// settle reports out when the run ended on its own, or what stopped it.
func (r *run) settle(out spi.Outcome) spi.Outcome {
	if r.cause.CompareAndSwap(causeNone, causeDone) || r.cause.Load() == causeDone {
		return out
	}
	return r.stopped()
}

// stopped reports what stopped the run.
func (r *run) stopped() spi.Outcome {
	switch r.cause.Load() {
	case causeWall:
		return spi.Limited(spi.LimitWallClock)
	case causeFiles:
		return spi.Limited(spi.LimitFiles)
	default: // causeCtx: Evaluate has already returned ctx.Err()
		return spi.Infrastructure("goja: run cancelled")
	}
}
