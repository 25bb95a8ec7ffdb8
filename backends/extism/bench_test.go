package extism_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

var benchInput = json.RawMessage(`{"text":"echo ✓ é","n":7,"list":[1,"two",null,true,false,{"k":[]}]}`)

// BenchmarkFreshEcho: one echo through the effect; the module is compiled
// once (before the timer), and every iteration creates, runs and closes a
// NEW instance.
func BenchmarkFreshEcho(b *testing.B) {
	backend, err := extism.New(nil)
	require.NoError(b, err)
	scripts := new(storage.MemoryStore)
	plugin, err := wasm.Set().Script("echo")
	require.NoError(b, err)
	addr, err := scripts.Put(plugin)
	require.NoError(b, err)
	e, err := effect.New(scripts, backend, nil)
	require.NoError(b, err)
	defer e.Close()
	ctx := context.Background()
	call := effect.Call{Script: addr, Input: benchInput}
	_, err = e.Evaluate(ctx, call) // compile
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileOnce: the first run of a module, which compiles it.
// "cold" uses a new backend each time (nothing cached: the Extism kernel
// and the module are compiled to machine code); "shared-code" misses the
// module cache (a new memory cap each time) but finds the machine code in
// the backend's shared compilation cache.
func BenchmarkCompileOnce(b *testing.B) {
	plugin, err := wasm.Set().Script("echo")
	require.NoError(b, err)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			backend, err := extism.New(nil)
			if err != nil {
				b.Fatal(err)
			}
			o, err := backend.Evaluate(ctx, spi.Request{Script: plugin, Input: benchInput,
				Limits: spi.Limits{WallClock: effect.DefaultWallClock, MemoryBytes: effect.DefaultMemoryBytes}})
			if err != nil || o.Kind != spi.KindOK {
				b.Fatal(o, err)
			}
			_ = backend.Close()
		}
	})
	b.Run("shared-code", func(b *testing.B) {
		backend, err := extism.New(nil)
		require.NoError(b, err)
		defer backend.Close()
		mem := effect.DefaultMemoryBytes
		b.ReportAllocs()
		for b.Loop() {
			mem += 65536
			o, err := backend.Evaluate(ctx, spi.Request{Script: plugin, Input: benchInput,
				Limits: spi.Limits{WallClock: effect.DefaultWallClock, MemoryBytes: mem}})
			if err != nil || o.Kind != spi.KindOK {
				b.Fatal(o, err)
			}
		}
	})
}

// BenchmarkKillOvershoot measures how long past a 50 ms wall clock the
// backend's Evaluate returns for runaway_loop (a loop, 32 MiB) and for
// runaway_native (memory.fill and memory.copy over all of its memory,
// repeated; with 1 GiB, so that only the clock can stop it). The wall
// clock covers the plugin's instantiation (see Evaluate), so the
// overshoot is Evaluate's time minus the clock: p50-over-ms, p99-over-ms
// and max-over-ms. Run it with enough iterations for a p99, e.g.
//
//	go test -run '^$' -bench KillOvershoot -benchtime 100x ./backends/extism/
func BenchmarkKillOvershoot(b *testing.B) {
	const clock = 50 * time.Millisecond
	for _, tc := range []struct {
		name, fixture string
		mem           int64
	}{
		{"loop", "runaway_loop", 32 << 20},
		{"memory_fill_1GiB", "runaway_native", 1 << 30},
	} {
		b.Run(tc.name, func(b *testing.B) {
			backend, err := extism.New(nil)
			require.NoError(b, err)
			defer backend.Close()
			plugin, err := wasm.Set().Script(tc.fixture)
			require.NoError(b, err)
			req := spi.Request{Script: plugin, Input: json.RawMessage(`{}`), Limits: spi.Limits{WallClock: clock, MemoryBytes: tc.mem}}
			ctx := context.Background()
			if _, err := backend.Evaluate(ctx, req); err != nil { // compile
				b.Fatal(err)
			}
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				out, err := backend.Evaluate(ctx, req)
				if err != nil || out.Kind != spi.KindLimit || out.Limit != spi.LimitWallClock {
					b.Fatal(out, err)
				}
				d = append(d, time.Since(t0)-clock)
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(percentile(d, 0.50)), "p50-over-ms")
			b.ReportMetric(ms(percentile(d, 0.99)), "p99-over-ms")
			b.ReportMetric(ms(percentile(d, 1)), "max-over-ms")
		})
	}
}

// percentile is the p-th percentile of ds (nearest rank), or 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
