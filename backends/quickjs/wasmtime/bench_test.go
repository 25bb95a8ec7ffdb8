//go:build cgo

package wasmtime_test

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/hostbench"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// benchBackend returns a warmed backend.
func benchBackend(b *testing.B) spi.Backend {
	b.Helper()
	be, err := wasmtime.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := be.Warm(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	return be
}

// benchEffect returns an effect over a warmed backend and the address of
// script in its store.
func benchEffect(b *testing.B, script []byte) (*effect.Effect, record.Address) {
	b.Helper()
	scripts := new(storage.MemoryStore)
	addr, err := scripts.Put(script)
	if err != nil {
		b.Fatal(err)
	}
	e, err := effect.New(scripts, benchBackend(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e, addr
}

// reportP50 adds the median and the 99th percentile of the per-op
// durations as metrics.
func reportP50(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
}

func benchEffectRuns(b *testing.B, script []byte, input json.RawMessage) {
	e, addr := benchEffect(b, script)
	ctx := context.Background()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: input}); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	reportP50(b, d)
}

// BenchmarkFreshEcho is the full effect path: effect.New over the backend
// and a MemoryStore, input {"a":1,"b":"x"}, script `input`.
func BenchmarkFreshEcho(b *testing.B) {
	benchEffectRuns(b, []byte("input"), json.RawMessage(`{"a":1,"b":"x"}`))
}

// BenchmarkFreshEchoBackend is the same run on the backend alone.
func BenchmarkFreshEchoBackend(b *testing.B) {
	be := benchBackend(b)
	req := spi.Request{Script: []byte("input"), Input: []byte(`{"a":1,"b":"x"}`), Limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 32 << 20}}
	ctx := context.Background()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		out, err := be.Evaluate(ctx, req)
		if err != nil || out.Kind != spi.KindOK {
			b.Fatal(out, err)
		}
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	reportP50(b, d)
}

// BenchmarkReshape runs the shared reshaping workload
// (../shared/bench/reshape.js, kept as ../testdata/reshape.js) through the
// effect.
func BenchmarkReshape(b *testing.B) {
	script, err := os.ReadFile("../testdata/reshape.js")
	if err != nil {
		b.Fatal(err)
	}
	benchEffectRuns(b, script, json.RawMessage(`null`))
}

// BenchmarkParallel runs fresh echo runs through the effect from
// GOMAXPROCS goroutines at once; compare its ns/op with
// BenchmarkFreshEcho for the scaling.
func BenchmarkParallel(b *testing.B) {
	e, addr := benchEffect(b, []byte("input"))
	input := json.RawMessage(`{"a":1,"b":"x"}`)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: input}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkKillOvershoot measures how long past a 50 ms wall clock
// Evaluate returns (start-up included, as for package quickjs), for a
// loop and for one long native call (with 1 GiB of memory, so that only
// the clock can stop it), and how long the 300 MB string and an
// allocation bomb take to be refused at the default 32 MiB limit.
func BenchmarkKillOvershoot(b *testing.B) {
	const clock = 50 * time.Millisecond
	for _, tc := range []struct {
		name, script string
		mem          int64
		want         spi.Outcome
	}{
		{"loop", "for (;;) {}", 32 << 20, spi.Limited(spi.LimitWallClock)},
		{"repeat3e8_1GiB", `"x".repeat(3e8).length`, 1 << 30, spi.Limited(spi.LimitWallClock)},
		{"repeat3e8_32MiB", `"x".repeat(3e8).length`, 32 << 20, spi.Limited(spi.LimitMemory)},
		{"allocation_bomb_32MiB", `globalThis.h = []; for (;;) h.push(new Array(1024).fill(h.length));`, 32 << 20, spi.Limited(spi.LimitMemory)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			be := benchBackend(b)
			req := spi.Request{Script: []byte(tc.script), Input: []byte("null"), Limits: spi.Limits{WallClock: clock, MemoryBytes: tc.mem}}
			if tc.want.Limit == spi.LimitMemory {
				req.Limits.WallClock = 10 * time.Second
			}
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				out, err := be.Evaluate(context.Background(), req)
				if err != nil || out.Kind != tc.want.Kind || out.Limit != tc.want.Limit {
					b.Fatal(out, err)
				}
				d = append(d, time.Since(t0))
			}
			b.StopTimer()
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			over := d[len(d)/2]
			if tc.want.Limit == spi.LimitWallClock {
				over -= clock
			}
			b.ReportMetric(float64(over.Microseconds())/1000, "p50-over-ms")
			b.ReportMetric(float64((d[len(d)-1]-(d[len(d)/2]-over)).Microseconds())/1000, "max-over-ms")
		})
	}
}

// BenchmarkHostCall: one host call's round trip through the effect,
// awaited one by one and issued in one turn, and 8 calls of a 50 ms host
// function at once (internal/hostbench).
func BenchmarkHostCall(b *testing.B) {
	hostbench.Run(b, func(testing.TB) spi.Backend { return benchBackend(b) })
}
