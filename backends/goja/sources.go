package goja

import (
	"fmt"
	"strings"
	"sync"

	js "github.com/dop251/goja"

	"github.com/sandbank/sandbank/internal/jsfront"
)

// The guards in this file bound source text that the script builds and
// has parsed at run time. goja parses it on the Go stack, as it parses the
// script, and a Go stack overflow ends the process: eval("(".repeat(1e6))
// crashed it. Every entry point that parses source at run time is replaced
// by one that measures the source first, with the same measure as the
// script's (at most MaxScriptBytes UTF-16 units, bracket nesting at most
// MaxScriptNesting), and throws a RangeError past it:
//
//   - eval (direct calls become indirect: see the package doc);
//   - the Function, AsyncFunction and GeneratorFunction constructors,
//     reached by name or through any prototype's constructor property
//     (goja has no async generators);
//   - RegExp (called or constructed), RegExp.prototype.compile, and
//     String.prototype.match, matchAll and search, which build a RegExp
//     from a string.
//
// JSON.parse is guarded in run.go. Each replacement keeps the original's
// name, length and attributes, and hands the original a string it has
// measured, so a script cannot show it one text and the engine another.

// rewireProgram makes G, a guarded replacement of the constructor C,
// stand where C stood: G takes C's own properties (name, length,
// prototype, statics such as Symbol.species) and C's [[Prototype]] (or
// proto, when not null: the guarded Function, for AsyncFunction and
// GeneratorFunction), and C's prototype names G as its constructor, with
// the attributes it had. Nothing then leads to C.
var rewireProgram = sync.OnceValue(func() *js.Program {
	return js.MustCompile("rewire.js", `(function (C, G, proto) {
  var keys = Reflect.ownKeys(C);
  for (var i = 0; i < keys.length; i++) {
    Object.defineProperty(G, keys[i], Object.getOwnPropertyDescriptor(C, keys[i]));
  }
  var d = Object.getOwnPropertyDescriptor(C.prototype, "constructor");
  d.value = G;
  Object.defineProperty(C.prototype, "constructor", d);
  Object.setPrototypeOf(G, proto === null ? Object.getPrototypeOf(C) : proto);
})`, true)
})

// fnFinderProgram returns the constructors that are reachable only
// through prototypes.
var fnFinderProgram = sync.OnceValue(func() *js.Program {
	return js.MustCompile("finder.js", `[
  Object.getPrototypeOf(async function () {}).constructor,
  Object.getPrototypeOf(function* () {}).constructor,
]`, true)
})

// sourceGetterProgram returns the original RegExp.prototype.source getter.
var sourceGetterProgram = sync.OnceValue(func() *js.Program {
	return js.MustCompile("getter.js", `Object.getOwnPropertyDescriptor(RegExp.prototype, "source").get`, true)
})

// sourceGuard measures source text before goja parses it.
type sourceGuard struct {
	rt          *js.Runtime
	maxUnits    int
	maxNesting  int
	rangeError  js.Value
	construct   js.Callable // the original Reflect.construct
	regexSource js.Callable // the original RegExp.prototype.source getter
}

// throw panics with a RangeError, which goja throws into the script.
func (g *sourceGuard) throw(msg string) {
	obj, err := g.rt.New(g.rangeError, g.rt.ToValue(msg))
	if err != nil {
		panic(err)
	}
	panic(obj)
}

// check refuses src, parsed at run time by what, when it is over the
// script's size or nesting limit.
func (g *sourceGuard) check(what string, src js.String) {
	if n := src.Length(); n > g.maxUnits {
		g.throw(fmt.Sprintf("%s: the source is %d characters, over the limit of %d", what, n, g.maxUnits))
	}
	g.checkText(what, src.String())
}

func (g *sourceGuard) checkText(what, src string) {
	if len(src) > 3*g.maxUnits { // a UTF-16 unit is at most 3 bytes of UTF-8
		g.throw(fmt.Sprintf("%s: the source is over the limit of %d characters", what, g.maxUnits))
	}
	if jsfront.Nesting([]byte(src), g.maxNesting) > g.maxNesting {
		g.throw(fmt.Sprintf("%s: the source nests brackets deeper than %d levels", what, g.maxNesting))
	}
}

// must returns v, or panics with err, which goja rethrows into the script.
func must(v js.Value, err error) js.Value {
	if err != nil {
		panic(err)
	}
	return v
}

// guardCtor returns the guarded replacement of the constructor C: a
// native constructor that passes every call and construction through
// prepare first, which measures the arguments and returns the ones to
// hand C (or, when done is not nil, the result itself). A native
// constructor cannot tell a call from a construction without a subclass
// (goja passes no new.target for either), so prepare is told neither;
// a Proxy could, but goja's instanceof refuses a Proxy as its right side.
func (g *sourceGuard) guardCtor(C *js.Object, prepare func(args []js.Value, self *js.Object) (out []js.Value, done *js.Object)) *js.Object {
	var G *js.Object
	G = g.rt.ToValue(func(cc js.ConstructorCall) *js.Object {
		args, done := prepare(cc.Arguments, G)
		if done != nil {
			return done
		}
		var nt js.Value = C
		if cc.NewTarget != nil && cc.NewTarget != G {
			nt = cc.NewTarget // a subclass
		}
		return must(g.construct(js.Undefined(), C, g.rt.NewArray(anys(args)...), nt)).ToObject(g.rt)
	}).ToObject(g.rt)
	return G
}

func anys(vs []js.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// isNullish reports whether v is missing, undefined or null.
func isNullish(v js.Value) bool { return v == nil || js.IsUndefined(v) || js.IsNull(v) }

// guardSources replaces the entry points listed at the top of this file.
func (b *Backend) guardSources(r *run) error {
	rt := r.rt
	g := &sourceGuard{rt: rt, maxUnits: b.maxScriptBytes, maxNesting: b.maxScriptNesting, rangeError: rt.Get("RangeError")}
	var err error
	if g.construct, err = callable(rt.Get("Reflect").ToObject(rt).Get("construct")); err != nil {
		return err
	}
	rw, err := rt.RunProgram(rewireProgram())
	if err != nil {
		return fmt.Errorf("goja: building the source guards: %w", err)
	}
	rewire, err := callable(rw)
	if err != nil {
		return err
	}
	global := rt.GlobalObject()

	// eval: a string is measured, then evaluated by the original (at global
	// scope: only the original object makes a direct eval).
	eval, err := callable(global.Get("eval"))
	if err != nil {
		return err
	}
	if err := replaceMethod(rt, global, "eval", 1, func(call js.FunctionCall) js.Value {
		src, ok := call.Argument(0).(js.String)
		if !ok {
			return call.Argument(0)
		}
		g.check("eval", src)
		return must(eval(js.Undefined(), src))
	}); err != nil {
		return err
	}

	// The function constructors.
	found, err := rt.RunProgram(fnFinderProgram())
	if err != nil {
		return fmt.Errorf("goja: finding the constructors: %w", err)
	}
	fn := global.Get("Function").ToObject(rt)
	guardedFn := g.guardCtor(fn, g.functionArgs("function"))
	if _, err := rewire(js.Undefined(), fn, guardedFn, js.Null()); err != nil {
		return fmt.Errorf("goja: guarding Function: %w", err)
	}
	if err := global.DefineDataProperty("Function", guardedFn, js.FLAG_TRUE, js.FLAG_TRUE, js.FLAG_FALSE); err != nil {
		return fmt.Errorf("goja: guarding Function: %w", err)
	}
	list := found.ToObject(rt)
	for i, kind := range []string{"async function", "function*"} {
		c := list.Get(fmt.Sprint(i)).ToObject(rt)
		if _, err := rewire(js.Undefined(), c, g.guardCtor(c, g.functionArgs(kind)), guardedFn); err != nil {
			return fmt.Errorf("goja: guarding the %s constructor: %w", kind, err)
		}
	}

	return g.guardRegExp(global, rewire)
}

// functionArgs returns the guard of a function constructor whose source
// starts with kind ("function", "async function", "function*"). The
// arguments are converted to strings once, measured as goja assembles
// them, and handed to the constructor as strings.
func (g *sourceGuard) functionArgs(kind string) func([]js.Value, *js.Object) ([]js.Value, *js.Object) {
	return func(in []js.Value, _ *js.Object) ([]js.Value, *js.Object) {
		args := make([]js.Value, len(in))
		var text strings.Builder
		text.WriteString("(" + kind + " anonymous(")
		units := 0
		for i, a := range in {
			if _, sym := a.(*js.Symbol); sym {
				args[i] = a // the constructor throws the TypeError
				continue
			}
			s := a.ToString()
			args[i] = s
			units += s.(js.String).Length()
			if units > g.maxUnits {
				g.throw(fmt.Sprintf("%s constructor: the source is over the limit of %d characters", kind, g.maxUnits))
			}
			if i == len(in)-1 {
				text.WriteString("\n) {\n")
			} else if i > 0 {
				text.WriteString(",")
			}
			text.WriteString(s.String())
		}
		text.WriteString("\n})")
		g.checkText(kind+" constructor", text.String())
		return args, nil
	}
}

// guardRegExp replaces RegExp, RegExp.prototype.compile and
// String.prototype.match, matchAll and search.
func (g *sourceGuard) guardRegExp(global *js.Object, rewire js.Callable) error {
	rt := g.rt
	C := global.Get("RegExp").ToObject(rt)
	proto := C.Get("prototype").ToObject(rt)
	getter, err := rt.RunProgram(sourceGetterProgram())
	if err != nil {
		return fmt.Errorf("goja: reading RegExp.prototype.source: %w", err)
	}
	if g.regexSource, err = callable(getter); err != nil {
		return err
	}

	// RegExp(r), called, returns a RegExp r itself; the guard cannot tell
	// a call from new RegExp(r) (see guardCtor), so it always copies, as
	// new does.
	P := g.guardCtor(C, func(args []js.Value, _ *js.Object) ([]js.Value, *js.Object) {
		pattern, flags := js.Undefined(), js.Undefined()
		if len(args) > 0 {
			pattern = args[0]
		}
		if len(args) > 1 {
			flags = args[1]
		}
		if o, ok := pattern.(*js.Object); ok && !g.isRegExp(o) {
			// Its source or string is read here, once, and measured; a
			// RegExp's source was measured when it was made.
			if m := o.GetSymbol(js.SymMatch); !isNullish(m) && m.ToBoolean() {
				pattern = nilSafe(o.Get("source")).ToString()
				if js.IsUndefined(flags) {
					flags = nilSafe(o.Get("flags")).ToString()
				}
			} else {
				pattern = o.ToString()
			}
		}
		if s, ok := pattern.(js.String); ok {
			g.check("RegExp", s)
		}
		return []js.Value{pattern, flags}, nil
	})
	if _, err := rewire(js.Undefined(), C, P, js.Null()); err != nil {
		return fmt.Errorf("goja: guarding RegExp: %w", err)
	}
	if err := global.DefineDataProperty("RegExp", P, js.FLAG_TRUE, js.FLAG_TRUE, js.FLAG_FALSE); err != nil {
		return fmt.Errorf("goja: guarding RegExp: %w", err)
	}

	compile, err := callable(proto.Get("compile"))
	if err != nil {
		return err
	}
	if err := replaceMethod(rt, proto, "compile", 2, func(call js.FunctionCall) js.Value {
		return must(compile(call.This, g.pattern("RegExp.prototype.compile", call.Argument(0)), call.Argument(1)))
	}); err != nil {
		return err
	}

	sp := global.Get("String").ToObject(rt).Get("prototype").ToObject(rt)
	for _, m := range []struct {
		name string
		sym  *js.Symbol
	}{{"match", js.SymMatch}, {"matchAll", js.SymMatchAll}, {"search", js.SymSearch}} {
		orig, err := callable(sp.Get(m.name))
		if err != nil {
			return err
		}
		name, sym := m.name, m.sym
		if err := replaceMethod(rt, sp, name, 1, func(call js.FunctionCall) js.Value {
			arg := call.Argument(0)
			o, ok := arg.(*js.Object)
			if !ok || isNullish(call.This) || g.isRegExp(o) {
				// A primitive is measured; the original refuses a null
				// this, and a RegExp's source was measured when it was made.
				return must(orig(call.This, g.pattern("String.prototype."+name, arg)))
			}
			isRx := false
			if name == "matchAll" {
				if m := o.GetSymbol(js.SymMatch); m != nil && m.ToBoolean() {
					isRx = true
					flags := o.Get("flags")
					if isNullish(flags) || !strings.Contains(flags.String(), "g") {
						panic(rt.NewTypeError("RegExp doesn't have global flag set"))
					}
				}
			}
			if method := o.GetSymbol(sym); !isNullish(method) {
				f, ok := js.AssertFunction(method)
				if !ok {
					panic(rt.NewTypeError("String.prototype." + name + ": the matcher is not a function"))
				}
				return must(f(o, call.This))
			}
			var src js.Value
			if isRx {
				src = nilSafe(o.Get("source")).ToString()
			} else {
				src = o.ToString()
			}
			return must(orig(call.This, g.pattern("String.prototype."+name, src)))
		}); err != nil {
			return err
		}
	}
	return nil
}

// isRegExp reports whether o is a real RegExp (its source was measured
// when it was made), by asking the original source getter, which throws
// for anything else.
func (g *sourceGuard) isRegExp(o *js.Object) bool {
	_, err := g.regexSource(o)
	return err == nil
}

// pattern measures v, a pattern argument, when it is a string, and
// returns it; an object other than a RegExp is converted to a string
// first, once.
func (g *sourceGuard) pattern(what string, v js.Value) js.Value {
	if o, ok := v.(*js.Object); ok && !g.isRegExp(o) {
		v = o.ToString()
	}
	if s, ok := v.(js.String); ok {
		g.check(what, s)
	}
	return v
}

// nilSafe turns a missing value into undefined.
func nilSafe(v js.Value) js.Value {
	if v == nil {
		return js.Undefined()
	}
	return v
}
