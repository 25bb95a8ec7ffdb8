// Package hostbench measures host calls through package effect, the same
// way for every engine: BenchmarkHostCall in each JavaScript backend's
// tests calls [Run]. It is imported only from tests.
package hostbench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
)

// The JavaScript scripts [Run] measures. Sequential awaits each call
// before the next (one boundary crossing per call each way); Batched
// issues every call in one turn of the event loop, then awaits them all.
const (
	Sequential = "let x = 0;\nfor (let i = 0; i < input.n; i++) x = await host.inc(x);\nx\n"
	Batched    = "const a = [];\nfor (let i = 0; i < input.n; i++) a.push(host.inc(i));\n(await Promise.all(a)).length\n"
)

// Calls is how many calls a measured run makes.
const Calls = 500

// SlowCalls and SlowCall are the concurrency figure's shape: SlowCalls
// calls of a host function that takes SlowCall, issued at once.
const (
	SlowCalls = 8
	SlowCall  = 50 * time.Millisecond
)

// Engine makes a fresh, warmed backend for one measurement.
type Engine func(tb testing.TB) spi.Backend

// Run reports, for the engine: "µs/call-p50", the median round trip of
// one call when the script awaits each call before the next;
// "µs/call-batched", one call's share of a run of Calls calls issued in
// one turn (minus a run of none: start-up cancels out); and "ms/8x50ms", the wall time of a
// run making SlowCalls calls of a SlowCall host function at once.
func Run(b *testing.B, newBackend Engine) {
	scripts := effect.NewMemoryStore()
	seq, err := scripts.Put([]byte(Sequential))
	if err != nil {
		b.Fatal(err)
	}
	bat, err := scripts.Put([]byte(Batched))
	if err != nil {
		b.Fatal(err)
	}
	inc := func(_ context.Context, args json.RawMessage) (any, error) {
		var n int
		if err := json.Unmarshal(args, &n); err != nil {
			return nil, err
		}
		return n + 1, nil
	}
	slow := func(ctx context.Context, args json.RawMessage) (any, error) {
		t := time.NewTimer(SlowCall)
		defer t.Stop()
		select {
		case <-t.C:
			return args, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e, err := effect.New(scripts, newBackend(b), &effect.Options{Limits: spi.Limits{WallClock: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	run := func(addr effect.Address, n int, fn effect.HostFunc) time.Duration {
		start := time.Now()
		got, err := e.Evaluate(context.Background(), effect.Call{Script: addr, Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)),
			Host: effect.HostFuncs{"inc": fn}})
		if err != nil || string(got) != fmt.Sprint(n) {
			b.Fatalf("%d calls: got %s, %v", n, got, err)
		}
		return time.Since(start)
	}
	// The sequential round trip is the time between the arrivals of
	// consecutive calls at the host function (the script's loop, the
	// engine's relay, the effect's broker and back), its median robust to
	// a loaded machine's stalls.
	var mu sync.Mutex
	var last time.Time
	var gaps []time.Duration
	timed := func(ctx context.Context, args json.RawMessage) (any, error) {
		now := time.Now()
		mu.Lock()
		if !last.IsZero() {
			gaps = append(gaps, now.Sub(last))
		}
		last = now
		mu.Unlock()
		return inc(ctx, args)
	}
	var batWith, batWithout, slowTook time.Duration
	var once sync.Once
	for b.Loop() {
		once.Do(func() { // warm the script cache of each path once
			run(seq, 1, inc)
			run(bat, 1, inc)
		})
		mu.Lock()
		last = time.Time{}
		mu.Unlock()
		run(seq, Calls, timed)
		batWith += run(bat, Calls, inc)
		batWithout += run(bat, 0, inc)
		slowTook += run(bat, SlowCalls, slow)
	}
	slices.Sort(gaps)
	if len(gaps) > 0 {
		b.ReportMetric(float64(gaps[len(gaps)/2].Nanoseconds())/1e3, "µs/call-p50")
	}
	b.ReportMetric(float64((batWith-batWithout).Nanoseconds())/1e3/float64(b.N*Calls), "µs/call-batched")
	b.ReportMetric(float64(slowTook.Microseconds())/1e3/float64(b.N), "ms/8x50ms")
}
