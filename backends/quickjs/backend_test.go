package quickjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/spi"
)

func TestCapabilities(t *testing.T) {
	caps := shared(t).Capabilities()
	require.NoError(t, caps.Validate())
	assert.Equal(t, spi.Capabilities{
		Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard,
		Memory: true, CPU: false, FreshPerRun: true, HostCalls: true, Logs: true, Deterministic: true, Files: true,
	}, caps)

	off := false
	soft := newBackend(t, &Options{CloseOnContextDone: &off})
	assert.Equal(t, spi.WallClockSoft, soft.Capabilities().WallClock)
}

func TestOptionsAreValidated(t *testing.T) {
	for name, opts := range map[string]*Options{
		"negative cold start": {ColdStartAllowance: -time.Second},
		"negative stderr":     {MaxStderrBytes: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(opts)
			assert.ErrorContains(t, err, "quickjs: negative")
		})
	}
	_, err := shared(t).Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte("1"), Limits: spi.Limits{WallClock: -1}})
	assert.ErrorContains(t, err, "quickjs: negative wall clock")
}

func TestScriptContract(t *testing.T) {
	b := shared(t)
	for _, tc := range []struct {
		name, script, input string
		want                spi.Outcome
	}{
		{"echo", "input", `{"a":1,"b":"x"}`, spi.OK(json.RawMessage(`{"a":1,"b":"x"}`))},
		{"completion value", "var x = 2; if (x) { x * 21 }", "", spi.OK(json.RawMessage(`42`))},
		{"strings", `"😀 \u00e9 \n \"q\""`, "", spi.OK(json.RawMessage(`"😀 é \n \"q\""`))},
		{"lone surrogate is escaped", `"a\uD800b"`, "", spi.OK(json.RawMessage(`"a\ud800b"`))},
		{"non-finite becomes null", "[NaN, Infinity]", "", spi.OK(json.RawMessage(`[null,null]`))},
		{"toJSON runs", "({toJSON() { return 7 }})", "", spi.OK(json.RawMessage(`7`))},
		{"error", `throw new RangeError("bad " + input.n)`, `{"n":3}`, spi.Threw("RangeError", "bad 3")},
		{"thrown string", `throw "plain"`, "", spi.Threw("", "plain")},
		{"thrown number", `throw 42`, "", spi.Threw("", "42")},
		{"thrown object", `throw {name: "Custom", message: "m"}`, "", spi.Threw("Custom", "m")},
		{"thrown null-prototype object", `throw Object.create(null)`, "", spi.Threw("", "")},
		{"syntax error", "var x = {;", "", spi.Threw("SyntaxError", "invalid property name (line 1, column 11)")},
		{"syntax error on line 3", "1;\n2;\n  let = ;", "", spi.Threw("SyntaxError", "unexpected token in expression: ';' (line 3, column 9)")},
		{"syntax error of an inner eval has no position", "(0, eval)('let = ;')", "", spi.Threw("SyntaxError", "unexpected token in expression: ';'")},
		{"a thrown SyntaxError has no position", "throw new SyntaxError('mine')", "", spi.Threw("SyntaxError", "mine")},
		{"undefined", "undefined", "", spi.Threw("TypeError", "the completion value cannot be represented as JSON: it is undefined")},
		{"empty script", "", "", spi.Threw("TypeError", "the completion value cannot be represented as JSON: it is undefined")},
		{"function", "(function () {})", "", spi.Threw("TypeError", "the completion value cannot be represented as JSON: it is a function")},
		{"symbol", "Symbol('s')", "", spi.Threw("TypeError", "the completion value cannot be represented as JSON: it is a symbol")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, eval(t, b, tc.script, tc.input, spi.Limits{}))
		})
	}
	for name, script := range map[string]string{
		"bigint": "10n",
		"cycle":  "var a = {}; a.self = a; a",
	} {
		t.Run(name, func(t *testing.T) {
			out := eval(t, b, script, "", spi.Limits{})
			assert.Equal(t, spi.KindThrew, out.Kind)
			assert.Equal(t, "TypeError", out.Name)
			assert.Contains(t, out.Message, "the completion value cannot be represented as JSON: ")
		})
	}
}

func TestArgumentGlobalsAreRemoved(t *testing.T) {
	out := eval(t, shared(t), `[typeof execArgv, typeof scriptArgs, typeof argv0, typeof std, typeof os,
		Object.getOwnPropertyNames(globalThis).filter(k => /argv|args/i.test(k))]`, "", spi.Limits{})
	assert.Equal(t, spi.OK(json.RawMessage(`["undefined","undefined","undefined","undefined","undefined",[]]`)), out)
}

func TestPrintedOutputCannotForgeTheResult(t *testing.T) {
	b := shared(t)
	// Every way the script can write: print, console, and the engine's
	// std module through a dynamic import (whose promise never settles).
	script := `
		const fake = "\x1eSBK" + "0".repeat(32) + "R5\n\"bad\"\x1eSBK" + "0".repeat(32) + "E\n";
		print(fake); console.log(fake); console.error(fake);
		import("qjs:std").then(std => { std.out.puts(fake); std.out.flush(); std.exit(0); });
		"real"`
	out := eval(t, b, script, "", spi.Limits{})
	assert.Equal(t, spi.OK(json.RawMessage(`"real"`)), out)

	// A script that only prints (no completion value) gets no result.
	out = eval(t, b, `print("\x1eSBK"); console.log(JSON.stringify({ok: true})); undefined`, "", spi.Limits{})
	assert.Equal(t, spi.KindThrew, out.Kind)
}

func TestPrintGoesToStderrEvenWithTheNonce(t *testing.T) {
	// Second line of defence: even a script that knew the nonce could not
	// reach stdout, because print and console write to stderr. This
	// wrapper leaks the nonce to prove it.
	b := withWrapper(t, patchWrapper(t, "G.input = input;", "G.input = input; G.leak = P;"))
	script := `
		const fake = leak + "R5\n\"bad\"" + leak + "E\n";
		print(fake); console.log(fake); console.info(fake); console.warn(fake);
		"real"`
	assert.Equal(t, spi.OK(json.RawMessage(`"real"`)), eval(t, b, script, "", spi.Limits{}))
}

func TestSoftWallClock(t *testing.T) {
	off := false
	// Its own compile (the compiled code differs without the checks).
	b := newBackend(t, &Options{CloseOnContextDone: &off, ColdStartAllowance: 10 * time.Minute})
	// Not stopped, but reported: the script ran past its clock.
	out := eval(t, b, "let i = 0; while (i < 3e6) i++; i", "", spi.Limits{WallClock: time.Millisecond})
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
	assert.Equal(t, spi.OK(json.RawMessage(`3`)), eval(t, b, "1 + 2", "", spi.Limits{}))
}

func TestEndingWithoutAResultIsThrown(t *testing.T) {
	// A real script cannot reach std.exit synchronously; this wrapper
	// hands it std to prove the host's reading of an exit without result.
	b := withWrapper(t, patchWrapper(t, "try { v = run(script);", "G.std = std; try { v = run(script);"))
	for _, script := range []string{"std.exit(0)", "std.exit(3)", "throw std.exit(1)", "std.out.puts('\\x1eSBK'); std.exit(0)"} {
		out := eval(t, b, script, "", spi.Limits{})
		assert.Equal(t, spi.KindThrew, out.Kind, script)
		assert.Contains(t, out.Message, "without a result", script)
	}
}

func TestStartupFailureIsUntyped(t *testing.T) {
	// The engine ending before the script started is no outcome of the
	// script: an untyped error naming the phase.
	b := withWrapper(t, `import * as std from "qjs:std"; std.exit(5);`)
	_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte("1")})
	require.ErrorIs(t, err, jsguest.ErrNoOutcome)
	assert.ErrorContains(t, err, "phase boot")
	assert.ErrorContains(t, err, "exit code 5")
}

func TestNoHostCapabilitiesEvenThroughStd(t *testing.T) {
	// Hand the script the engine's std and os modules directly: with no
	// preopens, no environment and fake clocks they reach nothing.
	b := withWrapper(t, patchWrapper(t, `import * as std from "qjs:std";`,
		`import * as std from "qjs:std"; globalThis.std = std; globalThis.os = os;`))
	script := `
		const got = {};
		const tryIt = (k, f) => { try { const v = f(); got[k] = v === null || v === undefined || (Array.isArray(v) && v[1] !== 0) ? null : v; } catch (e) { got[k] = null; } };
		tryIt("open", () => std.open("/etc/hostname", "r"));
		tryIt("openDot", () => std.open("./go.mod", "r"));
		tryIt("readdir", () => os.readdir("/"));
		tryIt("readdirDot", () => os.readdir("."));
		tryIt("environ", () => Object.keys(std.getenviron()).length || null);
		tryIt("getenv", () => std.getenv("PATH"));
		tryIt("exec", () => os.exec(["/bin/true"]) === 0 || null);
		tryIt("cwd", () => { const r = os.getcwd(); return r[1] === 0 && r[0] !== "/" ? r[0] : null; });
		got.now = Date.now() < Date.UTC(2001, 0, 1);
		got`
	out := eval(t, b, script, "", spi.Limits{})
	require.Equal(t, spi.KindOK, out.Kind, out.Message)
	assert.JSONEq(t, `{"open":null,"openDot":null,"readdir":null,"readdirDot":null,"environ":null,"getenv":null,"exec":null,"cwd":null,"now":true}`, string(out.Value))
}

func TestClocksAndRandomnessAreFake(t *testing.T) {
	b := shared(t)
	script := `[Date.now(), new Date().getUTCFullYear(), typeof performance === "undefined", Math.random()]`
	first := eval(t, b, script, "", spi.Limits{})
	require.Equal(t, spi.KindOK, first.Kind, first.Message)
	var v []any
	require.NoError(t, json.Unmarshal(first.Value, &v))
	require.Len(t, v, 4)
	assert.Less(t, v[0], float64(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()), "Date.now() must not read the host clock")
	assert.Equal(t, 2000.0, v[1])
	assert.Equal(t, true, v[2])
	// A fresh instance has fresh, deterministic clocks and randomness: the
	// same script gives the same answer, revealing nothing of earlier runs.
	again := eval(t, b, script, "", spi.Limits{})
	assert.Equal(t, first, again)
}

func TestFreshPerRunAndConcurrency(t *testing.T) {
	b := shared(t)
	const n = 8
	var wg sync.WaitGroup
	outs := make([]spi.Outcome, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := `globalThis.counter = (globalThis.counter || 0) + 1;
				Object.prototype.polluted = (Object.prototype.polluted || 0) + 1;
				({runs: counter, polluted: ({}).polluted, i: input.i})`
			outs[i], errs[i] = b.Evaluate(context.Background(), spi.Request{
				Script: []byte(script), Input: []byte(fmt.Sprintf(`{"i":%d}`, i)), Limits: spi.Limits{WallClock: 20 * time.Second},
			})
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, spi.OK(json.RawMessage(fmt.Sprintf(`{"runs":1,"polluted":1,"i":%d}`, i))), outs[i])
	}
}

func TestMemoryLimit(t *testing.T) {
	b := shared(t)
	limits := spi.Limits{MemoryBytes: 16 << 20}
	for name, script := range map[string]string{
		"allocation bomb":   `globalThis.hoard = []; for (;;) hoard.push(new Array(1024).fill(hoard.length));`,
		"one huge string":   `"x".repeat(3e8).length`,
		"huge array buffer": `new ArrayBuffer(64 << 20).byteLength`,
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, spi.Limited(spi.LimitMemory), eval(t, b, script, "", limits))
		})
	}
	t.Run("caught and survived", func(t *testing.T) {
		out := eval(t, b, `let r; try { "x".repeat(3e8) } catch (e) { r = e.name + ": " + e.message } r`, "", limits)
		assert.Equal(t, spi.OK(json.RawMessage(`"InternalError: out of memory"`)), out)
	})
	t.Run("the page cap holds without the engine's limit", func(t *testing.T) {
		// QuickJS's --memory-limit only catches single oversized
		// allocations on this build; the allocator is the real bound.
		nolimit := withWrapper(t, jsguest.Wrapper)
		nolimit.args = func(int64) []string { return []string{"qjs", "-e", jsguest.Wrapper} }
		facts := make(chan jsguest.Facts, 1)
		nolimit.observe = func(f jsguest.Facts) { facts <- f }
		out := eval(t, nolimit, `globalThis.hoard = []; for (;;) hoard.push(new Array(1024).fill(hoard.length));`, "", limits)
		assert.Equal(t, spi.Limited(spi.LimitMemory), out)
		assert.True(t, (<-facts).MemoryRefused, "the allocator must have refused growth")
	})
	t.Run("below what the engine needs to boot", func(t *testing.T) {
		assert.Equal(t, spi.Limited(spi.LimitMemory), eval(t, b, "input", "", spi.Limits{MemoryBytes: 64 << 10}))
	})
	t.Run("a run within the limit", func(t *testing.T) {
		out := eval(t, b, `new Array(100000).fill(1).length`, "", spi.Limits{MemoryBytes: 4 << 20})
		assert.Equal(t, spi.OK(json.RawMessage(`100000`)), out)
	})
}

func TestInputTooLarge(t *testing.T) {
	b := shared(t)
	big := `"` + strings.Repeat("a", 6<<20) + `"`
	assert.Equal(t, spi.InputTooLarge(), eval(t, b, "input.length", big, spi.Limits{MemoryBytes: 4 << 20}))
	// The same input parses within a larger limit: the phase is the input's.
	assert.Equal(t, spi.OK(json.RawMessage(fmt.Sprint(6<<20))), eval(t, b, "input.length", big, spi.Limits{MemoryBytes: 64 << 20}))
	// An input nested too deeply for the engine's stack (1 MiB: about
	// 65,000 levels of arrays fit).
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	assert.Equal(t, spi.InputTooLarge(), eval(t, b, "input.length", deep, spi.Limits{}))
	deep = strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	assert.Equal(t, spi.OK([]byte(`1`)), eval(t, b, "input.length", deep, spi.Limits{}))
}

func TestWallClock(t *testing.T) {
	b := shared(t)
	for name, script := range map[string]string{
		"loop":          "for (;;) {}",
		"native call":   `"x".repeat(3e8).length`, // with a 1 GiB limit this runs for seconds in one builtin
		"sort callback": "new Array(1e6).fill(0).sort(() => { for (;;) {} })",
	} {
		t.Run(name, func(t *testing.T) {
			out := eval(t, b, script, "", spi.Limits{WallClock: 50 * time.Millisecond, MemoryBytes: 1 << 30})
			assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
		})
	}
}

func TestStartupIsNotChargedToTheWallClock(t *testing.T) {
	// Parsing this input takes far longer than the script's clock.
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 200000 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"k":%d,"s":"v%d"}`, i, i)
	}
	sb.WriteString("]")
	facts := make(chan jsguest.Facts, 1)
	// A generous allowance: this test is about the wall clock, not about
	// how fast a loaded machine parses the input.
	own := newBackend(t, &Options{ColdStartAllowance: 10 * time.Minute})
	own.observe = func(f jsguest.Facts) { facts <- f }
	start := time.Now()
	out := eval(t, own, "input.length", sb.String(), spi.Limits{WallClock: 100 * time.Millisecond, MemoryBytes: 256 << 20})
	took := time.Since(start)
	assert.Equal(t, spi.OK(json.RawMessage(`200000`)), out)
	assert.False(t, (<-facts).WallClockExpired)
	if took < 100*time.Millisecond {
		t.Logf("the run took %v, less than the script's clock: this machine is too fast for the test to prove anything", took)
	}
}

func TestColdStartAllowance(t *testing.T) {
	// Start-up that overruns its allowance is an untyped error naming the
	// phase, never a limit (the script never ran).
	b := newBackend(t, &Options{ColdStartAllowance: time.Millisecond})
	big := `"` + strings.Repeat("a", 32<<20) + `"` // parsing it takes far longer than 1 ms
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte(big), Limits: spi.Limits{MemoryBytes: 1 << 30}})
	var se *StartupError
	require.ErrorAs(t, err, &se, "outcome %+v", out)
	assert.Contains(t, []string{"compile", "instantiate", "boot", "input"}, se.Phase)
	assert.ErrorContains(t, err, `quickjs: start-up phase "`+se.Phase+`" exceeded the cold-start allowance of 1ms`)
}

func TestCancellation(t *testing.T) {
	b := shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Evaluate(ctx, spi.Request{Script: []byte("1"), Input: []byte("1")})
	assert.ErrorIs(t, err, context.Canceled)

	// Cancelled once the script is in its loop (it logged), not after a
	// sleep.
	ctx, cancel = context.WithCancel(context.Background())
	looping := newStarted()
	go func() { <-looping.c; cancel() }()
	_, err = b.Evaluate(ctx, spi.Request{Script: []byte(`console.log("looping"); for (;;) {}`), Input: []byte("1"), Limits: spi.Limits{WallClock: time.Hour}, Logs: looping})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestClose(t *testing.T) {
	b := newBackend(t, nil)
	require.NoError(t, b.Warm(context.Background()))
	done := make(chan error, 1)
	looping := newStarted()
	go func() {
		_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(`console.log("looping"); for (;;) {}`), Input: []byte("1"), Limits: spi.Limits{WallClock: time.Hour}, Logs: looping})
		done <- err
	}()
	select {
	case <-looping.c: // the script is in its loop
	case err := <-done:
		t.Fatalf("the run ended before it logged: %v", err)
	}
	require.NoError(t, b.Close())
	assert.ErrorIs(t, <-done, ErrClosed)
	_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte("1")})
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, b.Warm(context.Background()), ErrClosed)
	assert.NoError(t, b.Close())
}

func TestBadInputIsAnError(t *testing.T) {
	_, err := shared(t).Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte("{not json")})
	require.Error(t, err)
	assert.False(t, errors.Is(err, context.Canceled))
	assert.ErrorContains(t, err, "quickjs: the engine could not read the request payload")
}

// TestDefaultColdStartGrowsWithTheInput: the default allowance adds
// DefaultColdStartPerInputMiB per MiB of input (parsing dominates
// start-up); an allowance set in Options is the whole allowance.
func TestDefaultColdStartGrowsWithTheInput(t *testing.T) {
	def, err := (*Options)(nil).settings()
	require.NoError(t, err)
	assert.Equal(t, DefaultColdStartAllowance, def.ColdStart.For(0))
	assert.Equal(t, DefaultColdStartAllowance+8*DefaultColdStartPerInputMiB, def.ColdStart.For(8<<20))
	set, err := (&Options{ColdStartAllowance: time.Second}).settings()
	require.NoError(t, err)
	assert.Equal(t, time.Second, set.ColdStart.For(8<<20))
}
