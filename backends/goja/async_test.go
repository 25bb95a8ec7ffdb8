package goja_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/spi"
)

func TestAsyncCompletionValueIsAwaited(t *testing.T) {
	b := newBackend(t, nil)
	for _, tc := range []struct {
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
		{"a rejection reads as a thrown error", `Promise.reject(new TypeError("nope"))`, spi.Threw("TypeError", "nope")},
		{"an async throw", `(async () => { await null; throw new RangeError("deep") })()`, spi.Threw("RangeError", "deep")},
		{"a top-level await that throws", "const o = await null\nthrow new TypeError(typeof o)", spi.Threw("TypeError", "object")},
		{"a non-Error rejection", `Promise.reject(7)`, spi.Threw("", "7")},
		{"a throwing then getter", `({ get then() { throw new Error("getter") } })`, spi.Threw("Error", "getter")},
		{"never settles", `new Promise(() => {})`, spi.Threw("Error", "the script's promise never settled")},
		{"never settles at top level", `await new Promise(() => {})`, spi.Threw("Error", "the script's promise never settled")},
		{"an unhandled rejection does not change the value", `Promise.reject(new Error("ignored")); Promise.resolve(3)`, spi.OK(json.RawMessage(`3`))},
		{"a fulfilled value JSON cannot represent", `Promise.resolve(undefined)`, spi.Threw("TypeError", "the completion value cannot be represented as JSON: it is undefined")},
		{"jobs queued while the value is written are dropped", `Promise.resolve({ toJSON() { Promise.resolve().then(function f() { for (;;) {} }); return 1 } })`, spi.OK(json.RawMessage(`1`))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, eval(t, b, tc.script, "", spi.Limits{WallClock: 10 * time.Second}))
		})
	}
}

func TestWallClockStopsAMicrotaskLoop(t *testing.T) {
	noLeak(t)
	b := newBackend(t, nil)
	for _, script := range []string{
		`function f() { Promise.resolve().then(f) } f(); new Promise(() => {})`,
		`(async () => { for (;;) await null })()`,
		`await (async () => { for (;;) await null })()`,
	} {
		t.Run(script, func(t *testing.T) {
			start := time.Now()
			out := eval(t, b, script, "", spi.Limits{WallClock: 100 * time.Millisecond})
			assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
			assert.Less(t, time.Since(start), 10*time.Second, "stopped at all (the wall clock plus a wide margin)")
		})
	}
}

func TestCancelStopsTheJobs(t *testing.T) {
	noLeak(t)
	b := newBackend(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := b.Evaluate(ctx, spi.Request{Script: []byte(`(async () => { for (;;) await null })()`), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestTopLevelAwaitKeepsTheUsersLine(t *testing.T) {
	b := newBackend(t, nil)
	out := eval(t, b, "const a = await 1\nlet b = (;\n", "", spi.Limits{})
	assert.Equal(t, spi.KindThrew, out.Kind)
	assert.Equal(t, "SyntaxError", out.Name)
	assert.Contains(t, out.Message, "Line 2:", out.Message)
}
