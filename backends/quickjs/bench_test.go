package quickjs_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/hostbench"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// reshape.js is the shared reshaping workload (../shared/bench/reshape.js).
//
//go:embed testdata/reshape.js
var reshapeJS []byte

// The stop configurations a benchmark compares.
const (
	stopCheck   = iota // the rewritten module's stop check (the default)
	wazeroClose        // the module as shipped, stopped by wazero's close-on-context-done (before issue 17)
	noCheck            // the module rewritten without the stop check (Options.StopCheck off), nothing to stop it
	fuel               // the stop check with a CPU budget (Options.Fuel)
)

// benchBackend returns a warmed backend in a mode and stop configuration.
func benchBackend(b testing.TB, mode quickjs.Mode, stop int) spi.Backend {
	b.Helper()
	var be *quickjs.Backend
	var err error
	switch stop {
	case stopCheck:
		be, err = quickjs.New(&quickjs.Options{Mode: mode})
	case wazeroClose:
		be, err = quickjs.NewWazeroClose(&quickjs.Options{Mode: mode})
	case fuel:
		be, err = quickjs.New(&quickjs.Options{Mode: mode, Fuel: 1 << 40})
	default:
		off := false
		be, err = quickjs.New(&quickjs.Options{Mode: mode, StopCheck: &off})
	}
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
func benchEffect(b testing.TB, mode quickjs.Mode, stop int, script []byte) (*effect.Effect, record.Address) {
	b.Helper()
	scripts := new(storage.MemoryStore)
	addr, err := scripts.Put(script)
	if err != nil {
		b.Fatal(err)
	}
	e, err := effect.New(scripts, benchBackend(b, mode, stop), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e, addr
}

// modes are the configurations every benchmark compares: parked
// instances and a fresh instance per run, each with the stop check, with
// wazero's close-on-context-done instead (the configuration before the
// stop check), and with nothing to stop a run; and parked instances with
// the stop check and a CPU budget.
var modes = []struct {
	name string
	mode quickjs.Mode
	stop int
}{
	{"parked/stopCheck", quickjs.ModeParked, stopCheck},
	{"fresh/stopCheck", quickjs.ModeFresh, stopCheck},
	{"parked/wazeroClose", quickjs.ModeParked, wazeroClose},
	{"fresh/wazeroClose", quickjs.ModeFresh, wazeroClose},
	{"parked/noCheck", quickjs.ModeParked, noCheck},
	{"fresh/noCheck", quickjs.ModeFresh, noCheck},
	{"parked/fuel", quickjs.ModeParked, fuel},
}

// reportP50 adds the median of the per-op durations as a metric.
func reportP50(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkFreshEcho is the full effect path: effect.New over the backend
// and a MemoryStore, input {"a":1,"b":"x"}, script `input`.
func BenchmarkFreshEcho(b *testing.B) {
	input := json.RawMessage(`{"a":1,"b":"x"}`)
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			e, addr := benchEffect(b, m.mode, m.stop, []byte("input"))
			ctx := context.Background()
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			cpu0 := processCPU()
			for range b.N {
				t0 := time.Now()
				if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: input}); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
			}
			b.StopTimer()
			reportCPU(b, cpu0)
			reportP50(b, d)
		})
	}
}

// BenchmarkFreshEchoBackend is the same run on the backend alone, without
// the effect around it.
func BenchmarkFreshEchoBackend(b *testing.B) {
	req := spi.Request{Script: []byte("input"), Input: []byte(`{"a":1,"b":"x"}`), Limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 32 << 20}}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			be := benchBackend(b, m.mode, m.stop)
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
		})
	}
}

// BenchmarkReshape runs the shared reshaping workload through the effect.
func BenchmarkReshape(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			e, addr := benchEffect(b, m.mode, m.stop, reshapeJS)
			ctx := context.Background()
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			cpu0 := processCPU()
			for range b.N {
				t0 := time.Now()
				if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: json.RawMessage(`null`)}); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
			}
			b.StopTimer()
			reportCPU(b, cpu0)
			reportP50(b, d)
		})
	}
}

// BenchmarkParallel runs echo runs through the effect from GOMAXPROCS
// goroutines at once, in both modes with the hard kill on; compare its
// ns/op with BenchmarkFreshEcho for the scaling.
func BenchmarkParallel(b *testing.B) {
	for _, m := range modes[:2] {
		b.Run(m.name, func(b *testing.B) {
			e, addr := benchEffect(b, m.mode, m.stop, []byte("input"))
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
		})
	}
}

// TestEchoLatency prints the echo's latency percentiles through the full
// effect with the hard kill on, for both modes in one process, and their
// ratio. It measures and asserts nothing about time; run it with
//
//	SANDBANK_LATENCY=2000 go test -run TestEchoLatency -v ./backends/quickjs/
func TestEchoLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SANDBANK_LATENCY"))
	if n <= 0 {
		t.Skip("set SANDBANK_LATENCY to a number of runs to print the echo's percentiles")
	}
	input := json.RawMessage(`{"a":1,"b":"x"}`)
	p50 := map[quickjs.Mode]time.Duration{}
	for _, m := range modes[:2] {
		e, addr := benchEffect(t, m.mode, m.stop, []byte("input"))
		ctx := context.Background()
		for range 100 { // warm the pool, the caches and the branch predictors
			if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: input}); err != nil {
				t.Fatal(err)
			}
		}
		d := make([]time.Duration, 0, n)
		for range n {
			t0 := time.Now()
			if _, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: input}); err != nil {
				t.Fatal(err)
			}
			d = append(d, time.Since(t0))
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		p50[m.mode] = d[n/2]
		t.Logf("%-20s n=%d p50=%v p99=%v max=%v", m.name, n, d[n/2], d[n*99/100], d[n-1])
	}
	t.Logf("parked/fresh p50 ratio: %.3f (fresh is %.1fx slower)", float64(p50[quickjs.ModeParked])/float64(p50[quickjs.ModeFresh]), float64(p50[quickjs.ModeFresh])/float64(p50[quickjs.ModeParked]))
}

// BenchmarkKillOvershoot measures, with the stop check (parked, and
// fresh) and with wazero's close-on-context-done, how long past a 50 ms wall clock Evaluate
// returns, for a loop and for one long native call (with 1 GiB
// of memory, so that only the clock can stop it), and how long the
// 300 MB string takes to be refused at the default 32 MiB limit.
//
// For the wall-clock cases, kill-p50-ms, kill-p99-ms and kill-max-ms are
// the time from the script's deadline (its start, as the run's Stats say,
// plus 50 ms) until Evaluate returned: the backend's kill overshoot.
// call-p99-ms adds the start-up (an instance taken from the pool, or
// booted when the pool's replacement is not ready yet): what a caller
// sees past the 50 ms. For the memory cases the figures are the time
// until the refusal. Run it with enough iterations for a p99, e.g.
//
//	go test -run '^$' -bench 'KillOvershoot/.*/(fresh-)?stopCheck' -benchtime 100x ./backends/quickjs/
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
		for _, stop := range []struct {
			name string
			mode quickjs.Mode
			stop int
		}{{"stopCheck", quickjs.ModeParked, stopCheck}, {"fresh-stopCheck", quickjs.ModeFresh, stopCheck}, {"wazeroClose", quickjs.ModeParked, wazeroClose}} {
			b.Run(tc.name+"/"+stop.name, func(b *testing.B) {
				be := benchBackend(b, stop.mode, stop.stop)
				req := spi.Request{Script: []byte(tc.script), Input: []byte("null"), Logs: discardLogs{},
					Limits: spi.Limits{WallClock: clock, MemoryBytes: tc.mem}}
				deadline := clock
				if tc.want.Limit == spi.LimitMemory {
					req.Limits.WallClock = 10 * time.Second
					deadline = 0
				}
				kill := make([]time.Duration, 0, b.N) // from the deadline (the script's start + clock)
				call := make([]time.Duration, 0, b.N) // from calling Evaluate + clock
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					out, err := be.Evaluate(context.Background(), req)
					d := time.Since(t0)
					if err != nil || out.Kind != tc.want.Kind || out.Limit != tc.want.Limit {
						b.Fatal(out, err)
					}
					kill = append(kill, d-out.Stats.Startup-deadline)
					call = append(call, d-deadline)
				}
				b.StopTimer()
				reportOvershoot(b, kill, call)
			})
		}
	}
}

// discardLogs is a log sink that keeps nothing: a request with a sink
// has its Stats filled in.
type discardLogs struct{}

func (discardLogs) Log(spi.LogLevel, spi.LogStream, string) bool { return true }

// reportOvershoot adds the p50, p99 and maximum of the kill overshoots and
// the p99 of the overshoots as the caller sees them as metrics.
func reportOvershoot(b *testing.B, kill, call []time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(kill, 0.50)), "kill-p50-ms")
	b.ReportMetric(ms(percentile(kill, 0.99)), "kill-p99-ms")
	b.ReportMetric(ms(percentile(kill, 1)), "kill-max-ms")
	b.ReportMetric(ms(percentile(call, 0.99)), "call-p99-ms")
}

// percentile is the p-th percentile of ds (nearest rank), or 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// BenchmarkKillFloor is the Go floor under BenchmarkKillOvershoot's loop,
// with no guest at all: a goroutine spins on an atomic flag (as the guest
// runs between two visits of its stop check), a 50 ms time.AfterFunc sets
// it (as the wall clock cancels the run's context), and the spinner hands
// back to the waiting goroutine over a channel (as an instance delivers its
// facts). timer-p99-ms is the timer's lateness, floor-p50-ms and
// floor-p99-ms the time from the deadline until the waiter had the answer.
// When these are close to BenchmarkKillOvershoot's kill figures, the
// overshoot is the host's (timer and scheduling latency), not the
// backend's.
//
//	go test -run '^$' -bench 'KillFloor' -benchtime 100x ./backends/quickjs/
func BenchmarkKillFloor(b *testing.B) {
	const clock = 50 * time.Millisecond
	late := make([]time.Duration, 0, b.N)
	floor := make([]time.Duration, 0, b.N)
	for range b.N {
		var stop atomic.Bool
		fired := make(chan time.Time, 1)
		done := make(chan struct{})
		t0 := time.Now()
		time.AfterFunc(clock, func() { fired <- time.Now(); stop.Store(true) })
		go func() {
			for n := 0; !stop.Load(); n++ {
				if n%4096 == 0 {
					runtime.Gosched() // a visit to Go, as the stop check's
				}
			}
			close(done)
		}()
		<-done
		end := time.Since(t0)
		late = append(late, (<-fired).Sub(t0)-clock)
		floor = append(floor, end-clock)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(late, 0.99)), "timer-p99-ms")
	b.ReportMetric(ms(percentile(floor, 0.50)), "floor-p50-ms")
	b.ReportMetric(ms(percentile(floor, 0.99)), "floor-p99-ms")
	b.ReportMetric(ms(percentile(floor, 1)), "floor-max-ms")
}

// BenchmarkStopCheckGrant measures how long the guest runs between two
// visits of its stop check (wasmhost.StopGrant units), for a loop and for
// "x".repeat: a run with a CPU budget of units stops once they are spent,
// so its time over units is the time per unit (wall time from the
// script's start, and the process's CPU time, which also counts the
// engine's boot and the collector). grant-wall-us and grant-cpu-us are
// the time of one grant: the longest a stopped run can go on before it sees its
// context, and how long the guest goroutine stays in compiled code.
//
//	go test -run '^$' -bench 'StopCheckGrant' -benchtime 5x ./backends/quickjs/
func BenchmarkStopCheckGrant(b *testing.B) {
	const units = 1 << 26
	for _, tc := range []struct{ name, script string }{
		{"loop", "for (;;) {}"},
		{"repeat", `for (;;) "x".repeat(3e6).length`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			be, err := quickjs.New(&quickjs.Options{Fuel: units})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = be.Close() })
			req := spi.Request{Script: []byte(tc.script), Input: []byte("null"), Logs: discardLogs{},
				Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 1 << 30}}
			var wall time.Duration
			b.ResetTimer()
			cpu0 := processCPU()
			for range b.N {
				t0 := time.Now()
				out, err := be.Evaluate(context.Background(), req)
				if err != nil || out.Kind != spi.KindLimit || out.Limit != spi.LimitCPU {
					b.Fatal(out, err)
				}
				wall += time.Since(t0) - out.Stats.Startup
			}
			cpu := processCPU() - cpu0
			perUnit := float64(wall) / float64(b.N) / units
			b.ReportMetric(perUnit, "wall-ns/unit")
			b.ReportMetric(perUnit*quickjs.PreemptGrant/1000, "grant-wall-us")
			b.ReportMetric(float64(cpu)/float64(b.N)/units*quickjs.PreemptGrant/1000, "grant-cpu-us")
		})
	}
}

// BenchmarkHostCall: one host call's round trip through the effect,
// awaited one by one and issued in one turn, and 8 calls of a 50 ms host
// function at once (internal/hostbench), parked and fresh.
func BenchmarkHostCall(b *testing.B) {
	for _, m := range modes[:2] {
		b.Run(m.name, func(b *testing.B) {
			hostbench.Run(b, func(tb testing.TB) spi.Backend { return benchBackend(tb, m.mode, m.stop) })
		})
	}
}
