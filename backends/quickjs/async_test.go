package quickjs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/spi"
)

// asyncCases are the async contract (docs/async.md), on both modes.
var asyncCases = []struct {
	name, script string
	want         spi.Outcome
}{
	{"the issue's async function", `(async () => { const x = await Promise.resolve(41); return x + 1 })()`, spi.OK(json.RawMessage(`42`))},
	{"the issue's top-level await", `await Promise.resolve(5)`, spi.OK(json.RawMessage(`5`))},
	{"a chain of promises to a rich value", `
const a = await Promise.resolve(1)
const b = await new Promise(r => r([a, 2]))
const c = await Promise.all([3, 4].map(async x => x * await Promise.resolve(10)))
;({ b, c, s: await Promise.resolve("x").then(s => s + "y") })`, spi.OK(json.RawMessage(`{"b":[1,2],"c":[30,40],"s":"xy"}`))},
	{"a then chain", `Promise.resolve(1).then(x => x + 1).then(x => [x])`, spi.OK(json.RawMessage(`[2]`))},
	{"a thenable that is not a promise", `({ then(ok) { ok(7) } })`, spi.OK(json.RawMessage(`7`))},
	{"for await at top level", "let s = 0\nfor await (const x of [1, Promise.resolve(2)]) s += x\ns", spi.OK(json.RawMessage(`3`))},
	{"a long chain settles before the timer", `(async () => { for (let i = 0; i < 2000; i++) await null; return 7 })()`, spi.OK(json.RawMessage(`7`))},
	{"a rejection reads as a thrown error", `Promise.reject(new TypeError("nope"))`, spi.Threw("TypeError", "nope")},
	{"an async throw", `(async () => { await null; throw new RangeError("deep") })()`, spi.Threw("RangeError", "deep")},
	{"a non-Error rejection", `Promise.reject(7)`, spi.Threw("", "7")},
	{"a throwing then getter", `({ get then() { throw new Error("getter") } })`, spi.Threw("Error", "getter")},
	{"never settles", `new Promise(() => {})`, spi.Threw("Error", "the script's promise never settled")},
	{"never settles at top level", `await new Promise(() => {})`, spi.Threw("Error", "the script's promise never settled")},
	{"an unhandled rejection does not change the value", `Promise.reject(new Error("ignored")); Promise.resolve(3)`, spi.OK(json.RawMessage(`3`))},
	{"a fulfilled value JSON cannot represent", `Promise.resolve(undefined)`, spi.Threw("TypeError", "the completion value cannot be represented as JSON: it is undefined")},
	{"a job cannot change a synchronous value", `var o = {a: 1}; Promise.resolve().then(function () { o.a = 2 }); o`, spi.OK(json.RawMessage(`{"a":1}`))},
	{"a runaway job is dropped for a synchronous value", `Promise.resolve().then(function () { for (;;) {} }); 1`, spi.OK(json.RawMessage(`1`))},
}

func TestAsyncCompletionValueIsAwaited(t *testing.T) {
	for mode, b := range map[string]*Backend{"parked": shared(t), "fresh": newBackend(t, &Options{Mode: ModeFresh})} {
		for _, tc := range asyncCases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				assert.Equal(t, tc.want, eval(t, b, tc.script, "", spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 64 << 20}))
			})
		}
	}
}

func TestWallClockStopsAMicrotaskLoop(t *testing.T) {
	b := shared(t)
	for _, script := range []string{
		`function f() { Promise.resolve().then(f) } f(); new Promise(() => {})`,
		`await (async () => { for (;;) await null })()`,
	} {
		t.Run(script, func(t *testing.T) {
			start := time.Now()
			out := eval(t, b, script, "", spi.Limits{WallClock: 200 * time.Millisecond, MemoryBytes: 64 << 20})
			assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
			assert.Less(t, time.Since(start), 20*time.Second, "stopped at all (the wall clock plus a wide margin)")
		})
	}
}

func TestJobsCountAgainstTheMemoryLimit(t *testing.T) {
	out := eval(t, shared(t), `(async () => { const a = []; for (;;) { a.push(new Array(1e5).fill(1)); await null } })()`, "", spi.Limits{MemoryBytes: 32 << 20})
	assert.Equal(t, spi.Limited(spi.LimitMemory), out)
}

func TestTopLevelAwaitKeepsTheUsersLine(t *testing.T) {
	out := eval(t, shared(t), "const a = await 1\n\nnull.boom", "", spi.Limits{MemoryBytes: 64 << 20})
	assert.Equal(t, spi.KindThrew, out.Kind)
	assert.Equal(t, "TypeError", out.Name)
}
