package goja_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// effectClock is the wall clock of the runs through the effect: far more
// than any of them needs (each guard answers in milliseconds), so a loaded
// machine cannot turn a refusal into a timeout.
const effectClock = 30 * time.Second

// evalEffect runs script through package effect, as a user deploys the
// backend, under effectClock, and returns its value and error.
func evalEffect(t *testing.T, script string, input any) (json.RawMessage, error) {
	t.Helper()
	scripts := new(storage.MemoryStore)
	e, err := effect.New(scripts, newBackend(t, nil), &effect.Options{Limits: spi.Limits{WallClock: effectClock}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	addr, err := scripts.Put([]byte(script))
	require.NoError(t, err)
	return e.Evaluate(context.Background(), effect.Call{Script: addr, Input: input})
}

// TestRuntimeSourceBombsAreTyped runs, in this test binary, scripts that
// build source text and have it parsed at run time, nested far past what
// goja's parser survives on the Go stack. Each used to end the process
// with "fatal error: stack overflow" (no recover catches it), so the
// binary surviving is the proof; each run must also end as a typed
// scriptError, a RangeError naming the guard.
func TestRuntimeSourceBombsAreTyped(t *testing.T) {
	noLeak(t)
	const (
		parens  = `"(".repeat(1e6) + "1" + ")".repeat(1e6)`
		regex   = `"(?:(?=a)".repeat(1e6) + ")*".repeat(1e6)` // crashed regexp2's compiler
		ifChain = `"if (1) ".repeat(1e6) + "1"`               // no brackets to count
	)
	for _, tc := range []struct{ name, script, guard string }{
		{"eval", `eval("(".repeat(1000000)+"1"+")".repeat(1000000))`, "eval: the source is"},
		{"eval of an object literal", `eval("x="+"{a:".repeat(1e6)+"1"+"}".repeat(1e6))`, "eval: the source is"},
		{"indirect eval", `(0, eval)(` + parens + `)`, "eval: the source is"},
		{"eval of a statement chain", `eval(` + ifChain + `)`, "eval: the source is"},
		{"eval nesting at a small size", `eval("[".repeat(1001) + "]".repeat(1001))`, "eval: the source nests brackets deeper than 1000 levels"},
		{"eval inside eval", `eval("eval('(' .repeat(1e6))")`, "eval: the source is"},
		{"new Function", `new Function("return "+"[".repeat(1e6)+"]".repeat(1e6))()`, "function constructor: the source is over"},
		{"Function called", `Function("a", ` + parens + `)`, "function constructor: the source is over"},
		{"Function in a parameter", `Function(` + parens + `, "")`, "function constructor: the source is over"},
		{"Function nesting across arguments", `Function("(".repeat(600), ")".repeat(0) + "(".repeat(600))`, "function constructor: the source nests brackets deeper than 1000 levels"},
		{"Function.prototype.constructor", `Function.prototype.constructor(` + parens + `)`, "function constructor: the source is over"},
		{"an arrow's constructor", `(() => 1).constructor(` + parens + `)`, "function constructor: the source is over"},
		{"a class's constructor", `(class {}).constructor(` + parens + `)`, "function constructor: the source is over"},
		{"Reflect.construct", `Reflect.construct(Function, [` + parens + `])`, "function constructor: the source is over"},
		{"a subclass of Function", `class F extends Function {}; new F(` + parens + `)`, "function constructor: the source is over"},
		{"AsyncFunction", `(async function () {}).constructor(` + parens + `)`, "async function constructor: the source is over"},
		{"new AsyncFunction", `new (Object.getPrototypeOf(async () => 1).constructor)(` + parens + `)`, "async function constructor: the source is over"},
		{"GeneratorFunction", `Object.getPrototypeOf(function* () {}).constructor(` + parens + `)`, "function* constructor: the source is over"},
		{"GeneratorFunction nesting", `Object.getPrototypeOf(function* () {}).constructor("(".repeat(1001))`, "function* constructor: the source nests brackets deeper than 1000 levels"},
		{"GeneratorFunction via its prototype's prototype", `Object.getPrototypeOf(Object.getPrototypeOf(function* () {}).constructor)(` + parens + `)`, "function constructor: the source is over"},
		{"RegExp", `new RegExp(` + regex + `)`, "RegExp: the source is"},
		{"RegExp called", `RegExp(` + regex + `, "u")`, "RegExp: the source is"},
		{"RegExp through a literal's constructor", `new (/x/.constructor)(` + regex + `)`, "RegExp: the source is"},
		{"RegExp from an object's toString", `RegExp({toString() { return ` + regex + ` }})`, "RegExp: the source is"},
		{"RegExp from a RegExp-like source", `RegExp({[Symbol.match]: true, source: ` + regex + `, flags: ""})`, "RegExp: the source is"},
		{"RegExp nesting at a small size", `RegExp("(".repeat(1001) + ")".repeat(1001))`, "RegExp: the source nests brackets deeper than 1000 levels"},
		{"RegExp.prototype.compile", `/x/.compile(` + regex + `)`, "RegExp.prototype.compile: the source is"},
		{"String.prototype.match", `"a".match(` + regex + `)`, "String.prototype.match: the source is"},
		{"String.prototype.matchAll", `"a".matchAll(` + regex + `)`, "String.prototype.matchAll: the source is"},
		{"String.prototype.search", `"a".search({toString() { return ` + regex + ` }})`, "String.prototype.search: the source is"},
		{"JSON.parse", `JSON.parse("[".repeat(4e6) + "]".repeat(4e6))`, "JSON.parse: nesting deeper than 10000 levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evalEffect(t, tc.script, nil)
			var f *effect.Failure
			require.True(t, errors.As(err, &f), "want a typed failure, got %v", err)
			assert.Equal(t, record.CodeScriptError, f.Code)
			assert.Equal(t, "RangeError", f.Name)
			assert.Contains(t, f.Message, tc.guard)
		})
	}
}

// TestRuntimeSourcesKeepTheirBehaviour: what the guards replace still
// works as the built-ins did, under their names, and a guard is
// catchable.
func TestRuntimeSourcesKeepTheirBehaviour(t *testing.T) {
	b := newBackend(t, nil)
	for _, tc := range []struct{ name, script, want string }{
		{"eval", `[eval("1 + 1"), eval(7), eval(), (0, eval)("typeof input"), eval.name, eval.length]`, `[2,7,null,"object","eval",1]`},
		{"eval runs at global scope", `var g = "global"; (function () { var g = "local"; return eval("g") })()`, `"global"`},
		{"eval of a syntax error", `try { eval("{") } catch (e) { e.name }`, `"SyntaxError"`},
		{"Function", `[new Function("a", "b", "return a + b")(1, 2), Function("return 3")(), Function.name, Function.length,
			typeof Function, Function.prototype.constructor === Function, (() => 1).constructor === Function,
			Function("return this")() === globalThis, new Function("a,b", "return a * b")(3, 4)]`, `[3,3,"Function",1,"function",true,true,true,12]`},
		{"a subclass of Function", `class F extends Function {}; var f = new F("return 7"); [f(), f instanceof F, f instanceof Function]`, `[7,true,true]`},
		{"AsyncFunction and GeneratorFunction", `var A = (async function () {}).constructor, G = Object.getPrototypeOf(function* () {}).constructor;
			[A.name, A.length, G.name, G.length, Object.getPrototypeOf(A) === Function, Object.getPrototypeOf(G) === Function,
			 A("return 1")() instanceof Promise, [...G("yield 1; yield 2")()], A.prototype.constructor === A, G.prototype.constructor === G,
			 Object.getPrototypeOf(async function () {}) === A.prototype]`, `["AsyncFunction",1,"GeneratorFunction",1,true,true,true,[1,2],true,true,true]`},
		// RegExp(r), called, copies r, as new RegExp(r) does (the guard
		// cannot tell the two apart); everything else is as before.
		{"RegExp", `var r = /a/g; [RegExp(r) !== r, new RegExp(r) !== r, new RegExp(r).source, RegExp("a", "g").flags,
			RegExp({toString() { return "b+" }}).source, new RegExp({[Symbol.match]: true, source: "c", flags: "i"}).flags,
			/a/.constructor === RegExp, RegExp[Symbol.species] === RegExp, RegExp.name, RegExp.length, RegExp.prototype.constructor === RegExp,
			new RegExp("x", "y").sticky, /x/ instanceof RegExp, new RegExp("a") instanceof RegExp]`,
			`[true,true,"a","g","b+","i",true,true,"RegExp",2,true,true,true,true]`},
		{"a subclass of RegExp", `class R extends RegExp {}; var r = new R("a+"); [r instanceof R, r.test("aa"), r.source]`, `[true,true,"a+"]`},
		{"compile", `var r = /x/; r.compile("y+", "g"); [r.source, r.flags, r.compile.name, r.compile.length]`, `["y+","g","compile",2]`},
		{"match, matchAll, search", `["aXa".match("a"), "aXa".match(/a/g), [..."aXa".matchAll("a")].length, [..."aXa".matchAll(/a/g)].length,
			"xa".search("a"), "xa".search(/a/), "x".match({[Symbol.match]: function (s) { return "custom " + s }}),
			"a".search({toString() { return "a" }}), String.prototype.match.name, String.prototype.matchAll.length]`,
			`[["a"],["a","a"],2,2,1,1,"custom x",0,"match",1]`},
		{"matchAll refuses a RegExp without g", `try { "a".matchAll(/a/) } catch (e) { e.name }`, `"TypeError"`},
		{"a guard is catchable", `try { eval("(".repeat(2000)) } catch (e) { [e instanceof RangeError, e.message] }`, `[true,"eval: the source nests brackets deeper than 1000 levels"]`},
		{"sizes at the limits pass", `[eval("[".repeat(1000) + "]".repeat(1000)).length, eval(" ".repeat(262140) + "1"), RegExp("(?:".repeat(500) + ")".repeat(500)).test("")]`, `[1,1,true]`},
		{"no new globals", `Object.getOwnPropertyNames(globalThis).filter(function (k) { return /^(eval|Function|RegExp)$/.test(k) }).map(function (k) {
			var d = Object.getOwnPropertyDescriptor(globalThis, k); return [k, d.writable, d.enumerable, d.configurable] })`,
			`[["Function",true,false,true],["RegExp",true,false,true],["eval",true,false,true]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, spi.OK(json.RawMessage(tc.want)), eval(t, b, tc.script, "", spi.Limits{}))
		})
	}
}

// TestNoUnguardedParserIsReachable walks everything the script can reach
// from globalThis (property values, accessors and prototypes) and calls
// every function named like a source-parsing built-in with source nested
// one level past the limit: each must be the guard. An original left
// reachable (a prototype's constructor, a [[Prototype]]) would answer
// with a SyntaxError instead.
func TestNoUnguardedParserIsReachable(t *testing.T) {
	script := `
var seen = new Set(), queue = [globalThis, async function () {}, function* () {}, () => 1, class {}, /x/, Object(""), Object(0)], found = [];
while (queue.length) {
  var o = queue.pop();
  if (o === null || (typeof o !== "object" && typeof o !== "function")) continue;
  if (seen.has(o)) continue;
  seen.add(o);
  queue.push(Object.getPrototypeOf(o));
  Reflect.ownKeys(o).forEach(function (k) {
    var d = Object.getOwnPropertyDescriptor(o, k);
    [d.value, d.get, d.set].forEach(function (v) { if (v !== undefined) queue.push(v); });
  });
  if (typeof o === "function" && /^(eval|Function|AsyncFunction|GeneratorFunction|RegExp|compile|match|matchAll|search)$/.test(o.name)) found.push(o);
}
var deep = "(".repeat(1001) + ")".repeat(1001);
found.map(function (f) {
  try {
    if (f.name === "compile") f.call(/x/, deep);
    else if (/^(match|matchAll|search)$/.test(f.name)) f.call("x", deep);
    else f(deep);
    return f.name + ": no error";
  } catch (e) {
    return e instanceof RangeError && / nests brackets deeper than 1000 levels$/.test(e.message) ? "guarded" : f.name + ": " + e;
  }
}).filter(function (r) { return r !== "guarded" }).concat([found.length])`
	out := eval(t, newBackend(t, nil), script, "", spi.Limits{})
	require.Equal(t, spi.KindOK, out.Kind, out.Message)
	// Function, AsyncFunction, GeneratorFunction, RegExp, eval, compile,
	// match, matchAll, search: nine, each once, and none unguarded.
	assert.Equal(t, `[9]`, string(out.Value))
}

// TestThrownValuesAreTyped: whatever the script throws is a typed
// scriptError, read without running the script's traps where goja would
// (a revoked proxy panicked in goja's instanceof test on the error path).
func TestThrownValuesAreTyped(t *testing.T) {
	b := newBackend(t, nil)
	for _, tc := range []struct {
		name, script string
		want         spi.Outcome
	}{
		{"a revoked proxy", `var r = Proxy.revocable({}, {}); r.revoke(); throw r.proxy`, spi.Threw("", "")},
		{"a revoked function proxy", `var r = Proxy.revocable(function () {}, {}); r.revoke(); throw r.proxy`, spi.Threw("", "")},
		{"a revoked proxy as the message", `var r = Proxy.revocable({}, {}); r.revoke(); throw {name: "N", message: r.proxy}`, spi.Threw("N", "[object Object]")},
		{"a revoked proxy inside an array", `var r = Proxy.revocable({}, {}); r.revoke(); throw [r.proxy]`, spi.Threw("", "")},
		{"a proxy whose traps throw", `throw new Proxy({}, {get() { throw 1 }, getPrototypeOf() { throw 2 }, has() { throw 3 }})`, spi.Threw("", "")},
		{"a proxy whose getPrototypeOf loops is never asked", `throw new Proxy(new Error("m"), {getPrototypeOf() { for (;;) {} }})`, spi.Threw("Error", "m")},
		{"a proxy of an error", `throw new Proxy(new TypeError("t"), {})`, spi.Threw("TypeError", "t")},
		{"a symbol", `throw Symbol("s")`, spi.Threw("", "Symbol(s)")},
		{"a bigint", `throw 10n`, spi.Threw("", "10")},
		{"toString and valueOf throw", `throw {toString() { throw 1 }, valueOf() { throw 2 }}`, spi.Threw("", "")},
		{"Symbol.toPrimitive throws", `throw {[Symbol.toPrimitive]() { throw 1 }}`, spi.Threw("", "")},
		{"toString returns an object", `throw {toString() { return {} }, valueOf() { return {} }}`, spi.Threw("", "")},
		{"a throwing stack getter", `var e = new Error("m"); Object.defineProperty(e, "stack", {get() { throw 1 }}); throw e`, spi.Threw("Error", "m")},
		{"a name that is not a string", `throw {name: 5, message: "m"}`, spi.Threw("", "m")},
		{"a function", `throw function f() {}`, spi.Threw("f", "function f() {}")},
		{"a GoError-shaped object", `throw {value: {}, message: "v"}`, spi.Threw("", "v")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, eval(t, b, tc.script, "", spi.Limits{WallClock: 20 * time.Second}))
		})
	}
	// Through the effect too: a typed scriptError.
	_, err := evalEffect(t, `var r = Proxy.revocable({}, {}); r.revoke(); throw r.proxy`, nil)
	var f *effect.Failure
	require.True(t, errors.As(err, &f), "want a typed failure, got %v", err)
	assert.Equal(t, record.CodeScriptError, f.Code)
}
