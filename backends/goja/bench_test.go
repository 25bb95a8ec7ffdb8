package goja_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"testing"
	"time"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/hostbench"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// reshape.js is the shared reshaping workload (/work/shared/bench/reshape.js).
//
//go:embed testdata/reshape.js
var reshapeJS []byte

// benchEffect returns an effect over a goja backend and the address of
// script in its MemoryStore.
func benchEffect(b *testing.B, script []byte) (*effect.Effect, record.Address) {
	b.Helper()
	be, err := goja.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	scripts := new(storage.MemoryStore)
	addr, err := scripts.Put(script)
	if err != nil {
		b.Fatal(err)
	}
	e, err := effect.New(scripts, be, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e, addr
}

// BenchmarkFreshEcho is the full effect path: effect.New over the backend
// and a MemoryStore, input {"a":1,"b":"x"}, script `input`.
func BenchmarkFreshEcho(b *testing.B) {
	e, addr := benchEffect(b, []byte("input"))
	input := json.RawMessage(`{"a":1,"b":"x"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: input}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFreshEchoBackend is the same run on the backend alone.
func BenchmarkFreshEchoBackend(b *testing.B) {
	be, err := goja.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	req := spi.Request{Script: []byte("input"), Input: []byte(`{"a":1,"b":"x"}`), Limits: spi.Limits{WallClock: 5 * time.Second}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out, err := be.Evaluate(ctx, req); err != nil || out.Kind != spi.KindOK {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkReshape runs the shared reshaping workload through the effect.
func BenchmarkReshape(b *testing.B) {
	e, addr := benchEffect(b, reshapeJS)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: json.RawMessage(`null`)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallel runs fresh echo runs through the effect from
// GOMAXPROCS goroutines at once.
func BenchmarkParallel(b *testing.B) {
	e, addr := benchEffect(b, []byte("input"))
	input := json.RawMessage(`{"a":1,"b":"x"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: input}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStopOvershoot measures how long past a 50 ms wall clock
// Evaluate returns for a loop (goja's interrupt is checked between
// instructions).
func BenchmarkStopOvershoot(b *testing.B) {
	const clock = 50 * time.Millisecond
	be, err := goja.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	req := spi.Request{Script: []byte("for (;;) {}"), Input: []byte("null"), Limits: spi.Limits{WallClock: clock}}
	var over time.Duration
	for b.Loop() {
		t0 := time.Now()
		if out, err := be.Evaluate(context.Background(), req); err != nil || out.Limit != spi.LimitWallClock {
			b.Fatal(out, err)
		}
		over += time.Since(t0) - clock
	}
	b.ReportMetric(float64(over.Microseconds())/1000/float64(b.N), "over-ms/op")
}

// BenchmarkHostCall: one host call's round trip through the effect,
// awaited one by one and issued in one turn, and 8 calls of a 50 ms host
// function at once (internal/hostbench).
func BenchmarkHostCall(b *testing.B) {
	hostbench.Run(b, func(tb testing.TB) spi.Backend {
		be, err := goja.New(nil)
		if err != nil {
			tb.Fatal(err)
		}
		return be
	})
}
