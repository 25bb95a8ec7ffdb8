//go:build cgo

package wasmtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

func TestAsyncCompletionValueIsAwaited(t *testing.T) {
	b := shared(t)
	for _, tc := range []struct {
		name, script string
		want         spi.Outcome
	}{
		{"the issue's async function", `(async () => { const x = await Promise.resolve(41); return x + 1 })()`, spi.OK(json.RawMessage(`42`))},
		{"the issue's top-level await", `await Promise.resolve(5)`, spi.OK(json.RawMessage(`5`))},
		{"a rejection reads as a thrown error", `Promise.reject(new TypeError("nope"))`, spi.Threw("TypeError", "nope")},
		{"a non-Error rejection", `Promise.reject(7)`, spi.Threw("", "7")},
		{"never settles", `new Promise(() => {})`, spi.Threw("Error", "the script's promise never settled")},
		{"a job cannot change a synchronous value", `var o = {a: 1}; Promise.resolve().then(function () { o.a = 2 }); o`, spi.OK(json.RawMessage(`{"a":1}`))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := eval(t, b, tc.script, "", spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 64 << 20})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out)
		})
	}
}

func TestWallClockStopsAMicrotaskLoop(t *testing.T) {
	start := time.Now()
	out, err := eval(t, shared(t), `function f() { Promise.resolve().then(f) } f(); new Promise(() => {})`, "", spi.Limits{WallClock: 200 * time.Millisecond, MemoryBytes: 64 << 20})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
	assert.Less(t, time.Since(start), 20*time.Second, "stopped at all (the wall clock plus a wide margin)")
}

func TestFuelStopsAMicrotaskLoop(t *testing.T) {
	b := newBackend(t, &Options{Fuel: 200_000_000})
	out, err := eval(t, b, `function f() { Promise.resolve().then(f) } f(); new Promise(() => {})`, "", spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitCPU), out)
}
