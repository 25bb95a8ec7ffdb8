// Package hostbench measures host calls through package effect, the same
// way for every engine: BenchmarkHostCall in each JavaScript backend's
// tests calls [Run], and in each Starlark backend's [RunSequential]. It
// is imported only from tests.
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
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
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

// StarlarkSequential is [Sequential] in Starlark, for [RunSequential].
const StarlarkSequential = "def main(input):\n    x = 0\n    for i in range(input[\"n\"]):\n        x = host.inc(x)\n    return x\n"

// harness is an effect over one backend, with its scripts.
type harness struct {
	b       *testing.B
	scripts *storage.MemoryStore
	e       *effect.Effect
}

func newHarness(b *testing.B, newBackend Engine) *harness {
	h := &harness{b: b, scripts: new(storage.MemoryStore)}
	e, err := effect.New(h.scripts, newBackend(b), &effect.Options{Limits: spi.Limits{WallClock: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	h.e = e
	return h
}

// put stores a script.
func (h *harness) put(src string) record.Address {
	addr, err := h.scripts.Put([]byte(src))
	if err != nil {
		h.b.Fatal(err)
	}
	return addr
}

// run runs the script at addr with input {"n": n} and the host function
// inc as fn; the script must return n.
func (h *harness) run(addr record.Address, n int, fn effect.HostFunc) time.Duration {
	start := time.Now()
	got, err := h.e.Evaluate(context.Background(), effect.Call{Script: addr, Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)),
		Host: effect.HostFuncs{"inc": fn}})
	if err != nil || string(got) != fmt.Sprint(n) {
		h.b.Fatalf("%d calls: got %s, %v", n, got, err)
	}
	return time.Since(start)
}

// inc answers its argument plus one.
func inc(_ context.Context, args json.RawMessage) (any, error) {
	var n int
	if err := json.Unmarshal(args, &n); err != nil {
		return nil, err
	}
	return n + 1, nil
}

// gapMeter is inc, timed: the sequential round trip is the time between
// the arrivals of consecutive calls at the host function (the script's
// loop, the engine's relay, the effect's broker and back), its median
// robust to a loaded machine's stalls.
type gapMeter struct {
	mu   sync.Mutex
	last time.Time
	gaps []time.Duration
}

func (m *gapMeter) inc(ctx context.Context, args json.RawMessage) (any, error) {
	now := time.Now()
	m.mu.Lock()
	if !m.last.IsZero() {
		m.gaps = append(m.gaps, now.Sub(m.last))
	}
	m.last = now
	m.mu.Unlock()
	return inc(ctx, args)
}

// reset starts a run: its first call has no gap.
func (m *gapMeter) reset() {
	m.mu.Lock()
	m.last = time.Time{}
	m.mu.Unlock()
}

// report reports the median gap as "µs/call-p50".
func (m *gapMeter) report(b *testing.B) {
	slices.Sort(m.gaps)
	if len(m.gaps) > 0 {
		b.ReportMetric(float64(m.gaps[len(m.gaps)/2].Nanoseconds())/1e3, "µs/call-p50")
	}
}

// Run reports, for a JavaScript engine: "µs/call-p50", the median round
// trip of one call when the script awaits each call before the next;
// "µs/call-batched", one call's share of a run of Calls calls issued in
// one turn (minus a run of none: start-up cancels out); and "ms/8x50ms",
// the wall time of a run making SlowCalls calls of a SlowCall host
// function at once.
func Run(b *testing.B, newBackend Engine) {
	h := newHarness(b, newBackend)
	seq, bat := h.put(Sequential), h.put(Batched)
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
	var gaps gapMeter
	var batWith, batWithout, slowTook time.Duration
	var once sync.Once
	for b.Loop() {
		once.Do(func() { // warm the script cache of each path once
			h.run(seq, 1, inc)
			h.run(bat, 1, inc)
		})
		gaps.reset()
		h.run(seq, Calls, gaps.inc)
		batWith += h.run(bat, Calls, inc)
		batWithout += h.run(bat, 0, inc)
		slowTook += h.run(bat, SlowCalls, slow)
	}
	gaps.report(b)
	b.ReportMetric(float64((batWith-batWithout).Nanoseconds())/1e3/float64(b.N*Calls), "µs/call-batched")
	b.ReportMetric(float64(slowTook.Microseconds())/1e3/float64(b.N), "ms/8x50ms")
}

// RunSequential reports "µs/call-p50" for an engine whose language has
// no asynchrony: the median round trip of one call of script (which
// calls host.inc input.n times, each on the last answer, and returns the
// last answer), such as [StarlarkSequential].
func RunSequential(b *testing.B, newBackend Engine, script string) {
	h := newHarness(b, newBackend)
	seq := h.put(script)
	h.run(seq, 1, inc) // warm the script cache
	var gaps gapMeter
	for b.Loop() {
		gaps.reset()
		h.run(seq, Calls, gaps.inc)
	}
	gaps.report(b)
}
