package goja_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/spi"
)

// longClock is a wall clock no test script is meant to reach.
const longClock = time.Minute

func newBackend(t testing.TB, opts *goja.Options) spi.Backend {
	t.Helper()
	b, err := goja.New(opts)
	require.NoError(t, err)
	return b
}

// eval runs script with input (JSON text; empty means null) and returns
// the outcome, failing on a Go error.
func eval(t testing.TB, b spi.Backend, script, input string, limits spi.Limits) spi.Outcome {
	t.Helper()
	if limits.WallClock == 0 {
		limits.WallClock = longClock
	}
	if input == "" {
		input = "null"
	}
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: json.RawMessage(input), Limits: limits})
	require.NoError(t, err)
	return out
}

func TestNewValidatesOptions(t *testing.T) {
	_, err := goja.New(nil)
	require.NoError(t, err)
	_, err = goja.New(&goja.Options{MaxCallStackSize: 10, MaxNesting: 50, MaxScriptBytes: 1000, MaxScriptNesting: 20})
	require.NoError(t, err)
	for _, tc := range []struct {
		opts goja.Options
		want string
	}{
		{goja.Options{MaxCallStackSize: -1}, "goja: negative MaxCallStackSize -1"},
		{goja.Options{MaxNesting: -1}, "goja: negative MaxNesting -1"},
		{goja.Options{MaxScriptBytes: -1}, "goja: negative MaxScriptBytes -1"},
		{goja.Options{MaxScriptNesting: -1}, "goja: negative MaxScriptNesting -1"},
		{goja.Options{MaxLeftovers: -1}, "goja: negative MaxLeftovers -1"},
		{goja.Options{MaxCallStackSize: 10001}, "goja: MaxCallStackSize 10001 is above the ceiling 10000"},
		{goja.Options{MaxNesting: 100001}, "goja: MaxNesting 100001 is above the ceiling 100000"},
		{goja.Options{MaxScriptBytes: goja.DefaultMaxScriptBytes + 1}, "goja: MaxScriptBytes 262145 is above the ceiling 262144"},
		{goja.Options{MaxScriptNesting: 10001}, "goja: MaxScriptNesting 10001 is above the ceiling 10000"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			b, err := goja.New(&tc.opts)
			assert.Nil(t, b)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestCapabilities(t *testing.T) {
	c := newBackend(t, nil).Capabilities()
	require.NoError(t, c.Validate())
	assert.Equal(t, spi.Capabilities{
		Language:    "javascript",
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockSoft,
		Memory:      false,
		CPU:         false,
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
		Files:       true,
	}, c)
}

func TestRequestValidation(t *testing.T) {
	b := newBackend(t, nil)
	_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte("1"), Limits: spi.Limits{WallClock: -1}})
	assert.EqualError(t, err, "goja: negative wall clock -1ns")
	_, err = b.Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte("1"), Limits: spi.Limits{MemoryBytes: -1}})
	assert.EqualError(t, err, "goja: negative memory limit -1")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := b.Evaluate(ctx, spi.Request{Script: []byte("input"), Input: []byte("1")})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, spi.Outcome{}, out)
}

func TestScriptContract(t *testing.T) {
	b := newBackend(t, nil)
	for _, tc := range []struct {
		name, script, input string
		want                spi.Outcome
	}{
		{"echo", "input", `{"a":1,"b":"x"}`, spi.OK(json.RawMessage(`{"a":1,"b":"x"}`))},
		{"no input is null", "input", "", spi.OK(json.RawMessage(`null`))},
		{"completion value", "var x = 2; if (x) { x * 21 }", "", spi.OK(json.RawMessage(`42`))},
		{"input is a global", "globalThis.input.n + 1", `{"n":41}`, spi.OK(json.RawMessage(`42`))},
		{"strings", `"😀 \u00e9 \n \"q\""`, "", spi.OK(json.RawMessage(`"😀 é \n \"q\""`))},
		{"lone surrogate is escaped", `"a\uD800b"`, "", spi.OK(json.RawMessage(`"a\ud800b"`))},
		{"non-finite becomes null", "[NaN, Infinity]", "", spi.OK(json.RawMessage(`[null,null]`))},
		{"big integers", "input", `[2147483649,9007199254740991,-9007199254740991]`, spi.OK(json.RawMessage(`[2147483649,9007199254740991,-9007199254740991]`))},
		{"toJSON runs", "({toJSON() { return 7 }})", "", spi.OK(json.RawMessage(`7`))},
		{"undefined keys dropped", "({a: undefined, b: function () {}, c: 1})", "", spi.OK(json.RawMessage(`{"c":1}`))},
		{"error", `throw new RangeError("bad " + input.n)`, `{"n":3}`, spi.Threw("RangeError", "bad 3")},
		{"custom error class", `class E extends Error { constructor(m) { super(m); this.name = "E" } }; throw new E("m")`, "", spi.Threw("E", "m")},
		{"thrown string", `throw "plain"`, "", spi.Threw("", "plain")},
		{"thrown number", `throw 42`, "", spi.Threw("", "42")},
		{"thrown undefined", `throw undefined`, "", spi.Threw("", "undefined")},
		{"thrown object", `throw {name: "Custom", message: "m"}`, "", spi.Threw("Custom", "m")},
		{"thrown object without message", `throw {toString() { return "ts" }}`, "", spi.Threw("", "ts")},
		{"thrown null-prototype object", `throw Object.create(null)`, "", spi.Threw("", "")},
		{"throwing getters", `throw {get name() { throw 1 }, get message() { throw 2 }, toString() { throw 3 }}`, "", spi.Threw("", "")},
		{"replaced String cannot change the reading", `String = function () { return "forged" }; throw {toString() { return "real" }}`, "", spi.Threw("", "real")},
		{"replaced JSON.stringify is not used", `JSON.stringify = function () { return "1" }; ({ok: true})`, "", spi.OK(json.RawMessage(`{"ok":true}`))},
		{"caught errors stay caught", `var r; try { null.x } catch (e) { r = e.name } r`, "", spi.OK(json.RawMessage(`"TypeError"`))},
		{"engine TypeError", `var u; u.x`, "", spi.Threw("TypeError", "Cannot read property 'x' of undefined")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, eval(t, b, tc.script, tc.input, spi.Limits{}))
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	b := newBackend(t, nil)
	for name, script := range map[string]string{
		"fixture":         "var x = {;",
		"unclosed":        "(function () {",
		"return at top":   "return 1",
		"bad regexp":      "/(/",
		"invalid UTF-8":   "\"\xff\"",
		"too large":       strings.Repeat(" ", goja.DefaultMaxScriptBytes+1),
		"nested too deep": strings.Repeat("[", goja.DefaultMaxScriptNesting+1) + strings.Repeat("]", goja.DefaultMaxScriptNesting+1),
	} {
		t.Run(name, func(t *testing.T) {
			out := eval(t, b, script, "", spi.Limits{})
			assert.Equal(t, spi.KindThrew, out.Kind)
			assert.Equal(t, "SyntaxError", out.Name)
			assert.NotEmpty(t, out.Message)
			assert.NotContains(t, out.Message, "\xff")
		})
	}
	out := eval(t, b, "var x = {;", "", spi.Limits{})
	assert.Equal(t, spi.Threw("SyntaxError", "script.js: Line 1:11 Unexpected token ; (and 3 more errors)"), out)

	// The limits are inclusive.
	ok := strings.Repeat("[", goja.DefaultMaxScriptNesting) + strings.Repeat("]", goja.DefaultMaxScriptNesting) + ".length"
	assert.Equal(t, spi.OK(json.RawMessage(`1`)), eval(t, b, ok, "", spi.Limits{}))
}

func TestUnrepresentableValues(t *testing.T) {
	b := newBackend(t, nil)
	const prefix = "the completion value cannot be represented as JSON: "
	for _, tc := range []struct{ name, script, message string }{
		{"undefined", "undefined", prefix + "it is undefined"},
		{"empty script", "", prefix + "it is undefined"},
		{"declaration only", "var x = 1;", prefix + "it is undefined"},
		{"function", "(function () {})", prefix + "it is a function"},
		{"symbol", "Symbol('s')", prefix + "it is a symbol"},
		{"toJSON returns nothing", "({toJSON() {}})", prefix + "it is an object whose toJSON returns nothing"},
		{"bigint", "10n", prefix + "Do not know how to serialize a BigInt"},
		{"cycle", "var a = {}; a.self = a; a", prefix + "Converting circular structure to JSON"},
		{"toJSON throws", `({toJSON() { throw new Error("no") }})`, prefix + "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, spi.Threw("TypeError", tc.message), eval(t, b, tc.script, "", spi.Limits{}))
		})
	}
}

func TestClockIsFake(t *testing.T) {
	b := newBackend(t, nil)
	epoch := goja.FakeEpoch.UnixMilli()
	out := eval(t, b, `[Date.now(), Date.now(), new Date().getTime(), new Date().toISOString()]`, "", spi.Limits{})
	require.Equal(t, spi.KindOK, out.Kind, out.Message)
	assert.JSONEq(t, fmt.Sprintf(`[%d, %d, %d, "2000-01-01T00:00:00.003Z"]`, epoch, epoch+1, epoch+2), string(out.Value))

	// Far from the host's clock, and the same on every run.
	var got []any
	require.NoError(t, json.Unmarshal(out.Value, &got))
	assert.Greater(t, time.Since(time.UnixMilli(int64(got[0].(float64)))), 24*time.Hour)
	assert.Equal(t, out, eval(t, b, `[Date.now(), Date.now(), new Date().getTime(), new Date().toISOString()]`, "", spi.Limits{}))
}

func TestRandomIsNotTheHosts(t *testing.T) {
	b := newBackend(t, nil)
	script := `[Math.random(), Math.random(), Math.random()]`
	out := eval(t, b, script, "", spi.Limits{})
	require.Equal(t, spi.KindOK, out.Kind, out.Message)
	var got []float64
	require.NoError(t, json.Unmarshal(out.Value, &got))

	// The documented source: PCG seeded with RandomSeed, fresh per run.
	want := rand.New(rand.NewPCG(goja.RandomSeed, ^goja.RandomSeed))
	assert.Equal(t, []float64{want.Float64(), want.Float64(), want.Float64()}, got)
	assert.Equal(t, out, eval(t, b, script, "", spi.Limits{}), "every run sees the same sequence")
}

func TestNoHostCapabilities(t *testing.T) {
	b := newBackend(t, nil)
	out := eval(t, b, `["require", "process", "module", "setTimeout", "setInterval", "setImmediate", "clearTimeout",
		"queueMicrotask", "fetch", "XMLHttpRequest", "WebSocket", "Buffer", "performance", "structuredClone"]
		.filter(function (k) { return typeof globalThis[k] !== "undefined" })`, "", spi.Limits{})
	assert.Equal(t, spi.OK(json.RawMessage(`[]`)), out)

	// console and print exist, accept anything and go nowhere: not even
	// the arguments are converted.
	out = eval(t, b, `var bomb = {toString() { throw new Error("converted") }};
		console.log(bomb); console.info(bomb); console.warn(bomb); console.error(bomb);
		console.debug(bomb); console.trace(bomb); print(bomb); "quiet"`, "", spi.Limits{})
	assert.Equal(t, spi.OK(json.RawMessage(`"quiet"`)), out)

	// A dynamic import does not even compile in a classic script.
	out = eval(t, b, `var r = "none"; try { (0, eval)('import("fs")'); r = "started" } catch (e) { r = e.name } r`, "", spi.Limits{})
	assert.Equal(t, spi.OK(json.RawMessage(`"SyntaxError"`)), out)
}

// TestPromiseJobsDoNotRunForASynchronousValue: a completion value that is
// not thenable is written before any job runs, and the jobs are dropped
// (async_test.go has the thenable ones).
func TestPromiseJobsDoNotRunForASynchronousValue(t *testing.T) {
	b := newBackend(t, nil)
	for _, tc := range []struct {
		name, script string
		want         spi.Outcome
	}{
		{"a job cannot change the value", `var o = {a: 1}; Promise.resolve().then(function () { o.a = 2 }); o`, spi.OK(json.RawMessage(`{"a":1}`))},
		{"a runaway job is dropped", `Promise.resolve().then(function () { for (;;) {} }); 1`, spi.OK(json.RawMessage(`1`))},
		{"an async function after its first await", `(async function () { await null; for (;;) {} })(); 2`, spi.OK(json.RawMessage(`2`))},
		{"dropped when the script throws", `Promise.resolve().then(function () { for (;;) {} }); throw new Error("x")`, spi.Threw("Error", "x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, eval(t, b, tc.script, "", spi.Limits{}))
		})
	}
}

func TestFreshRuntimePerRun(t *testing.T) {
	b := newBackend(t, nil)
	script := `Object.prototype.runs = (Object.prototype.runs || 0) + 1; globalThis.g = (globalThis.g || 0) + 1;
		JSON.parse = function () { return "poisoned" }; [({}).runs, g]`
	for range 3 {
		assert.Equal(t, spi.OK(json.RawMessage(`[1,1]`)), eval(t, b, script, "", spi.Limits{}))
	}
}

func TestWallClockStopsALoop(t *testing.T) {
	noLeak(t)
	b := newBackend(t, nil)
	for _, script := range []string{
		"for (;;) {}",
		"function f() { for (;;) {} } [1].map(f)",                // inside a built-in's callback
		"({toJSON() { for (;;) {} }})",                           // while the result is written
		"throw {get message() { for (;;) {} }}",                  // while the error is read
		"var a = []; for (var i = 0; i < 60000; i++) a = [a]; a", // in the result's quadratic stringify
	} {
		t.Run(script, func(t *testing.T) {
			out := eval(t, b, script, "", spi.Limits{WallClock: 100 * time.Millisecond})
			assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
		})
	}
}

func TestWallClockIsArmedWhenTheScriptStarts(t *testing.T) {
	// Parsing a 16 MB input takes far longer than the clock; it is setup,
	// not charged to the script.
	b := newBackend(t, nil)
	input := "[" + strings.Repeat("1234567,", 2<<20) + "0]"
	out := eval(t, b, "input.length", input, spi.Limits{WallClock: 50 * time.Millisecond})
	assert.Equal(t, spi.OK(json.RawMessage(fmt.Sprint(2<<20+1))), out)
}

func TestCancelReturnsAndStopsTheRun(t *testing.T) {
	noLeak(t)
	b := newBackend(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		out spi.Outcome
		err error
	}
	done := make(chan result, 1)
	running := newFirstLine()
	go func() {
		out, err := b.Evaluate(ctx, spi.Request{Script: []byte(loggedLoop), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}, Logs: running})
		done <- result{out, err}
	}()
	<-running.c // the script is in its loop
	cancel()
	select {
	case r := <-done:
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.Equal(t, spi.Outcome{}, r.out)
	case <-time.After(30 * time.Second):
		t.Fatal("Evaluate did not return after the context was cancelled")
	}
}

func TestDeepRecursionIsTyped(t *testing.T) {
	b := newBackend(t, nil)
	for _, script := range []string{
		"function f(n) { return f(n + 1) + 1 } f(0)",
		"function f() { return [1].map(f) } f()",
		"var o = {get x() { return this.x }}; o.x",
		"function f() { return JSON.stringify({toJSON: f}) } f()",
		"function f() { return String({toString: f}) } f()",
		"var p = new Proxy({}, {get: function (t, k, r) { return r[k] }}); p.x",
		"function f() { return f() } ({toJSON: f})",
		"function f() { try { return f() } catch (e) { return f() } } f()",
	} {
		t.Run(script, func(t *testing.T) {
			assert.Equal(t, spi.Threw("RangeError", "Maximum call stack size exceeded"), eval(t, b, script, "", spi.Limits{}))
		})
	}
	assert.Equal(t, spi.OK(json.RawMessage(`1`)), eval(t, b, "input", "1", spi.Limits{}), "the backend still works")
}

func TestDeepNestingCannotCrashTheProcess(t *testing.T) {
	b := newBackend(t, nil)
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	t.Run("input at the limit round-trips", func(t *testing.T) {
		in := deep(goja.DefaultMaxNesting)
		assert.Equal(t, spi.OK(json.RawMessage(in)), eval(t, b, "input", in, spi.Limits{}))
	})
	t.Run("input past the limit does not fit", func(t *testing.T) {
		assert.Equal(t, spi.InputTooLarge(), eval(t, b, "input", deep(goja.DefaultMaxNesting+1), spi.Limits{}))
		assert.Equal(t, spi.InputTooLarge(), eval(t, b, "input", deep(8_000_000), spi.Limits{}))
	})
	t.Run("brackets inside strings do not count", func(t *testing.T) {
		in := `["` + strings.Repeat("[", 20000) + `\"` + `"]`
		assert.Equal(t, spi.OK(json.RawMessage(in)), eval(t, b, "input", in, spi.Limits{}))
	})
	// Without the guard, flat(Infinity) over 2,000,000 levels kills the
	// process. Under the race detector building that many arrays takes
	// minutes, so the depth there is 200,000: still 20 times past the
	// guard, and without the guard the call would return a value, so the
	// test still fails when the guard is removed.
	flatDepth := "2e6"
	if raceEnabled {
		flatDepth = "2e5"
	}
	for _, tc := range []struct{ name, script, want string }{
		{"JSON.parse", `JSON.parse("[".repeat(4e6) + "]".repeat(4e6))`, "JSON.parse: nesting deeper than 10000 levels"},
		{"JSON.parse with a reviver", `JSON.parse("[".repeat(4e6), function (k, v) { return v })`, "JSON.parse: nesting deeper than 10000 levels"},
		{"flat(Infinity)", `var a = []; for (var i = 0; i < ` + flatDepth + `; i++) a = [a]; a.flat(Infinity)`, "Array.prototype.flat: nesting deeper than 10000 levels"},
		{"flat(1e9)", `var a = [1]; for (var i = 0; i < 20000; i++) a = [a]; a.flat(1e9)`, "Array.prototype.flat: nesting deeper than 10000 levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, spi.Threw("RangeError", tc.want), eval(t, b, tc.script, "", spi.Limits{}))
		})
	}
	t.Run("the guards are catchable and keep the built-ins' behaviour", func(t *testing.T) {
		out := eval(t, b, `var caught; try { JSON.parse("[".repeat(20000)) } catch (e) { caught = e instanceof RangeError }
			var a = [1]; for (var i = 0; i < 100; i++) a = [a, i];
			[caught, JSON.parse.name, JSON.parse.length, [].flat.name, [].flat.length,
			 JSON.parse('{"a":[1,2]}', function (k, v) { return typeof v === "number" ? v * 2 : v }),
			 [[1, [2, [3]]]].flat(), [[1, [2, [3]]]].flat(Infinity), [[1, [2]]].flat(NaN), [[1, [2]]].flat("2"),
			 a.flat(Infinity).length, Object.keys(JSON).length, Object.keys(Array.prototype).length]`, "", spi.Limits{})
		assert.Equal(t, spi.OK(json.RawMessage(`[true,"parse",2,"flat",0,{"a":[2,4]},[1,[2,[3]]],[1,2,3],[[1,[2]]],[1,2],101,0,0]`)), out)
	})
	t.Run("a JSON syntax error in the script is still a SyntaxError", func(t *testing.T) {
		out := eval(t, b, `JSON.parse("{")`, "", spi.Limits{})
		assert.Equal(t, "SyntaxError", out.Name)
	})
}

// TestSourceNestingEvasion runs the worst case the bracket count cannot
// see: real nesting hidden behind decoy closing brackets in strings, at the
// largest script size accepted (about 131,000 levels). The parser must
// reach the end of it (and report the dangling call) without overflowing
// the Go stack, which would kill this test binary.
func TestSourceNestingEvasion(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 256 KiB of nesting")
	}
	k := goja.DefaultMaxScriptNesting
	block := strings.Repeat("(", k) + `"` + strings.Repeat(")", k) + `"`
	script := strings.Repeat(block, goja.DefaultMaxScriptBytes/len(block))
	out := eval(t, newBackend(t, nil), script, "", spi.Limits{})
	assert.Equal(t, spi.KindThrew, out.Kind)
	assert.Equal(t, "SyntaxError", out.Name)
}

func TestConcurrentRuns(t *testing.T) {
	b := newBackend(t, nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 8 {
				in := fmt.Sprintf(`{"i":%d,"j":%d}`, i, j)
				out := eval(t, b, `globalThis.n = (globalThis.n || 0) + 1; [input.i, input.j, n, Date.now() - Date.UTC(2000, 0, 1)]`, in, spi.Limits{})
				assert.Equal(t, spi.OK(json.RawMessage(fmt.Sprintf(`[%d,%d,1,0]`, i, j))), out)
			}
		})
	}
	wg.Wait()
}
