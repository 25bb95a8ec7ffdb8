package quickjs

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// corpusCase is one script of the differential corpus. discards is true
// when the script's run ends its parked instance (a limit, an overflow;
// not a memory growth, which the instance survives: growth.go), so the next run may boot a new one.
type corpusCase struct {
	name, script, input string
	limits              spi.Limits
	discards            bool
	host                bool // the run has host functions (corpusHost)
}

// corpus holds scripts that would reveal any state left by an earlier run:
// each either changes engine state a later run could observe, or observes
// it, or both. Run in a fresh instance, every one of them sees a pristine
// engine.
var corpus = []corpusCase{
	{name: "echo", script: `input`, input: `{"a":1,"b":"x","c":[true,null,1.5e300,"\u00e9\ud83d\ude00"]}`},
	{name: "prototype_pollution", script: `const seen = [({}).polluted, typeof [].map, typeof Math.max, Object.isFrozen(Object.prototype), typeof String.prototype.evil];
		Object.prototype.polluted = (Object.prototype.polluted || 0) + 1;
		Array.prototype.map = null; delete Math.max; String.prototype.evil = () => 1;
		Object.freeze(Object.prototype);
		seen`},
	{name: "globals", script: `var declaredVar = (typeof declaredVar === "undefined" ? 0 : declaredVar) + 1;
		globalThis.counter = (globalThis.counter || 0) + 1;
		[declaredVar, counter, Object.keys(globalThis).sort()]`},
	{name: "lexical_global", script: `let lexical = 1; const constant = 2; class Klass {}; lexical + constant`},
	{name: "symbol_registry", script: `const before = globalThis.__syms ? __syms.length : 0;
		globalThis.__syms = [Symbol.for("sandbank"), Symbol.for("sandbank" + before)];
		[before, Symbol.keyFor(__syms[0]), Symbol.for("sandbank") === __syms[0], typeof Symbol.sandbankLeak];
		`},
	{name: "regexp_statics", script: `const before = [RegExp.$1, RegExp.lastMatch, RegExp.input, RegExp.leftContext];
		/(a+)(b)/.exec("xaab-leak");
		[before, RegExp.$1, RegExp.$2, RegExp.lastMatch]`},
	{name: "weakref_finalization", script: `globalThis.kept = globalThis.kept || [];
		const fr = new FinalizationRegistry(() => { globalThis.finalized = (globalThis.finalized || 0) + 1; });
		for (let i = 0; i < 100; i++) { const o = {i}; fr.register(o, i); kept.push(new WeakRef(o)); }
		[kept.length, globalThis.finalized || 0, typeof kept[0].deref()]`},
	{name: "clocks_and_random", script: `[Date.now(), Date.now(), typeof performance, Math.random(), Math.random(), new Date().toISOString(), typeof crypto]`},
	{name: "clocks_only", script: `const t = []; for (let i = 0; i < 5; i++) t.push(Date.now()); t`},
	{name: "throw_error", script: `globalThis.thrown = (globalThis.thrown || 0) + 1; throw new TypeError("nope " + thrown)`},
	{name: "throw_string", script: `throw "plain " + typeof globalThis.thrown`},
	{name: "syntax_error", script: `let = ;`},
	{name: "undefined_result", script: `undefined`},
	{name: "pending_jobs", script: `Promise.resolve().then(() => { globalThis.late = (globalThis.late || 0) + 1; });
		(async () => { await null; globalThis.later = 1; })();
		[globalThis.late || 0, globalThis.later || 0]`},
	{name: "print", script: `print("to stderr"); console.log("and", {x: 1}); globalThis.printed = true; "printed"`},
	{name: "json_overrides", script: `const was = JSON.stringify({a: 1});
		JSON.stringify = () => '"pwned"'; JSON.parse = () => "pwned"; globalThis.toJSONLeak = 1;
		[was, typeof input]`, input: `[1,2]`},
	{name: "caught_repeat_oom", script: `let r; try { "x".repeat(3e8); r = "no"; } catch (e) { r = [e.name, e.message]; } r`},
	{name: "caught_bomb", script: `const h = []; let r; try { for (;;) h.push(new Array(4096).fill(h.length)); } catch (e) { r = String(e); } h.length = 0; r`, discards: true},
	{name: "allocation_bomb", script: `globalThis.h = []; for (;;) h.push(new Array(1024).fill(h.length));`, discards: true},
	{name: "deep_recursion", script: `function f(n) { return n === 0 ? 0 : 1 + f(n - 1); } f(100000)`, discards: true},
	{name: "deadline", script: `globalThis.spun = true; for (;;) {}`, limits: spi.Limits{WallClock: 30 * time.Millisecond}, discards: true},
	{name: "big_string", script: `globalThis.big = "y".repeat(1 << 20); big.length`},
	{name: "async_state", script: `globalThis.asyncRuns = (globalThis.asyncRuns || 0) + 1;
		Promise.resolve().then(() => { globalThis.jobLeak = (globalThis.jobLeak || 0) + 1; });
		await null;
		[asyncRuns, globalThis.jobLeak || 0, typeof globalThis.timerLeak]`},
	{name: "async_timer", script: `(async () => {
		const os = await import("qjs:os");
		os.setTimeout(() => { globalThis.timerLeak = 1; }, 0);
		await null;
		return typeof globalThis.timerLeak;
	})()`},
	{name: "never_settles", script: `globalThis.pendingLeak = new Promise(() => {}); pendingLeak`},
	{name: "async_rejects", script: `globalThis.rejected = (globalThis.rejected || 0) + 1; Promise.reject(new RangeError("r" + rejected))`},
	// Host calls: state written around and between calls, the global host
	// itself, and a failed call, none of which a later run may see.
	{name: "host_calls", host: true, script: `globalThis.hostLeak = (globalThis.hostLeak || 0) + 1;
		const a = await host.echo({n: hostLeak, s: "é😀"});
		globalThis.between = typeof between;
		const b = await host.echo([a, typeof host.nope]);
		host.extra = 1; Object.prototype.fromHost = a;
		[a, b, hostLeak, between, typeof host, typeof globalThis.hostTried]`, input: `{"x":1}`},
	{name: "host_failure", host: true, script: `globalThis.hostTried = 1;
		let m; try { await host.fails(input); } catch (e) { m = [e.name, e.message]; }
		[m, typeof globalThis.hostLeak, ({}).fromHost === undefined]`, input: `[1]`},
	{name: "host_observer", script: `[typeof globalThis.host, typeof globalThis.hostLeak, typeof globalThis.between, ({}).fromHost === undefined]`},
}

// corpusHost is the host of the corpus runs that have host functions:
// echo answers its argument, anything else fails.
type corpusHost struct{}

func (corpusHost) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if name == "echo" {
		return args, nil
	}
	return nil, errors.New("corpus: " + name + " fails ✓")
}

// corpusMemory is the memory limit of every corpus run: small, so that
// the allocation bombs end quickly.
const corpusMemory = 4 << 20

type result struct {
	out spi.Outcome
	err string
}

func runCase(t *testing.T, b *Backend, c corpusCase) result {
	t.Helper()
	input := c.input
	if input == "" {
		input = "null"
	}
	limits := c.limits
	if limits.WallClock == 0 {
		limits.WallClock = 20 * time.Second
	}
	limits.MemoryBytes = corpusMemory
	req := spi.Request{Script: []byte(c.script), Input: []byte(input), Limits: limits}
	if c.host {
		req.Host = corpusHost{}
	}
	out, err := b.Evaluate(context.Background(), req)
	r := result{out: out}
	if err != nil {
		r.err = err.Error()
	}
	return r
}

// TestDifferentialFreshVersusParked proves that restoring a parked
// instance is as good as a fresh one: every corpus script gives
// byte-identical results in both modes, run first and run right after
// every other corpus script on the same parked instance (a pool of one).
func TestDifferentialFreshVersusParked(t *testing.T) {
	fresh := newBackend(t, &Options{Mode: ModeFresh})
	parked := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	require.NoError(t, parked.Warm(t.Context()))

	want := map[string]result{}
	for _, c := range corpus {
		want[c.name] = runCase(t, fresh, c)
		again := runCase(t, fresh, c)
		require.Equal(t, want[c.name], again, "%s: not deterministic in fresh mode", c.name)
		require.Empty(t, want[c.name].err, "%s", c.name)
		t.Logf("%-22s %s %s %s %s", c.name, want[c.name].out.Kind, want[c.name].out.Name, want[c.name].out.Message, truncate(string(want[c.name].out.Value)))
	}

	followsClean := 0
	reuses := parked.reuses.Load()
	for _, c := range corpus {
		assert.Equal(t, want[c.name], runCase(t, parked, c), "%s first", c.name)
	}
	for _, prev := range corpus {
		for _, c := range corpus {
			assert.Equal(t, want[prev.name], runCase(t, parked, prev), "%s before %s", prev.name, c.name)
			if !prev.discards {
				followsClean++
			}
			assert.Equal(t, want[c.name], runCase(t, parked, c), "%s after %s", c.name, prev.name)
		}
	}
	// The test proves restoration only if the runs did reuse instances.
	assert.GreaterOrEqual(t, parked.reuses.Load()-reuses, int64(followsClean), "runs after a clean run must resume the parked instance")
}

func truncate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
