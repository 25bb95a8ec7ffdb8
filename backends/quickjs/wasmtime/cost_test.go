//go:build cgo

package wasmtime

import (
	"context"
	"os"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	wt "github.com/bytecodealliance/wasmtime-go/v39"
	quickjswasi "github.com/paralin/go-quickjs-wasi"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/spi"
)

// What a run pays for fuel and for the stack pass. BenchmarkCost runs
// the reshape workload and echo on the backend alone, on each engine
// (fuel counted or not) and with the module as the backend runs it (the
// stack pass applied) or, for comparison only, the unguarded original
// (which no backend ever runs: its C stack has no bound check). The
// variants run in rotating order, one run each per round, so that the
// machine's noise hits them alike; each reports the median of its runs'
// wall time and of the CPU time of the thread that ran the guest
// (RUSAGE_THREAD: what the run itself cost, whatever else the machine
// did):
//
//	go test -run '^$' -bench BenchmarkCost -benchtime 40x ./backends/quickjs/wasmtime/
//
// The figures are in docs/performance.md.
func BenchmarkCost(b *testing.B) {
	reshape, err := os.ReadFile("../testdata/reshape.js")
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct {
		name  string
		fuel  uint64
		guard bool
	}{
		{"fuel=off,stack=pass", 0, true},
		{"fuel=on,stack=pass", MaxFuel, true},
		{"fuel=off,stack=none", 0, false},
		{"fuel=on,stack=none", MaxFuel, false},
	}
	for _, w := range []struct{ name, script, input string }{
		{"reshape", string(reshape), "null"},
		{"echo", "input", `{"a":1,"b":"x"}`},
	} {
		b.Run(w.name, func(b *testing.B) {
			runtime.LockOSThread() // the guest runs on this thread: its CPU time is the run's
			defer runtime.UnlockOSThread()
			req := spi.Request{Script: []byte(w.script), Input: []byte(w.input), Limits: spi.Limits{WallClock: time.Minute}, Logs: discard{}}
			bes := make([]*Backend, len(variants))
			for i, v := range variants {
				bes[i] = costBackend(b, v.fuel, v.guard)
			}
			wall := make([][]time.Duration, len(variants))
			cpu := make([][]time.Duration, len(variants))
			startup := make([][]time.Duration, len(variants))
			b.ResetTimer()
			for n := range b.N {
				for k := range variants {
					i := (n + k) % len(variants)
					c0, t0 := threadCPU(b), time.Now()
					out, err := bes[i].Evaluate(context.Background(), req)
					t1, c1 := time.Now(), threadCPU(b)
					if err != nil || out.Kind != spi.KindOK {
						b.Fatal(out, err)
					}
					wall[i] = append(wall[i], t1.Sub(t0))
					cpu[i] = append(cpu[i], c1-c0)
					startup[i] = append(startup[i], out.Stats.Startup)
				}
			}
			b.StopTimer()
			for i, v := range variants {
				b.ReportMetric(p50ms(wall[i]), v.name+"-wall-ms")
				b.ReportMetric(p50ms(cpu[i]), v.name+"-cpu-ms")
				b.ReportMetric(p50ms(startup[i]), v.name+"-startup-ms")
			}
		})
	}
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkInstantiate is the part of a fresh run that is wasmtime's
// alone: a store with its WASI configuration and limiter, the stop flag,
// and the instance of the compiled module (its memory initialised), then
// their release; no guest code runs.
func BenchmarkInstantiate(b *testing.B) {
	for _, fuel := range []bool{false, true} {
		name := "fuel=off"
		if fuel {
			name = "fuel=on"
		}
		b.Run(name, func(b *testing.B) {
			be := costBackend(b, map[bool]uint64{false: 0, true: MaxFuel}[fuel], true)
			mod, err := be.module(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				wasi := wt.NewWasiConfig()
				wasi.SetArgv(jsguest.Args(32 << 20))
				store := wt.NewStoreWithData(be.rt.engine, &run{b: be})
				stop := newStopFlag(be.rt.engine)
				store.SetWasi(wasi)
				store.Limiter(32<<20, -1, -1, -1, -1)
				if fuel {
					_ = store.SetFuel(bootFuel)
				}
				stop.install(store)
				if _, err := be.rt.linker.Instantiate(store, mod); err != nil {
					b.Fatal(err)
				}
				store.Close()
				stop.free()
				wasi.Close()
				d = append(d, time.Since(t0))
			}
			b.StopTimer()
			b.ReportMetric(p50ms(d), "p50-ms")
		})
	}
}

// costBackend is a warmed backend on the engine with or without fuel;
// guard false swaps in the unguarded module (for measuring only).
func costBackend(b *testing.B, fuel uint64, guard bool) *Backend {
	b.Helper()
	o := &Options{Fuel: fuel}
	if !guard {
		o.CacheDir = "unguarded (BenchmarkCost)" // a module key of its own, never a directory
		rt, err := processRuntime(fuel > 0)
		if err != nil {
			b.Fatal(err)
		}
		key := moduleKey{fuel: fuel > 0, cacheDir: o.CacheDir}
		modulesMu.Lock()
		if _, ok := modules[key]; !ok {
			m := &compiledModule{done: make(chan struct{})}
			m.once.Do(func() {})
			m.mod, m.err = wt.NewModule(rt.engine, quickjswasi.QuickJSWASM)
			close(m.done)
			modules[key] = m
		}
		modulesMu.Unlock()
	}
	be, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	if !guard {
		if be.layout, err = jsguest.ParseLayout(quickjswasi.QuickJSWASM); err != nil {
			b.Fatal(err)
		}
	}
	if err := be.Warm(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	return be
}

func p50ms(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2].Microseconds()) / 1000
}

// discard is a log sink that keeps nothing; setting one makes a run
// report its stats.
type discard struct{}

func (discard) Log(spi.LogLevel, spi.LogStream, string) bool { return true }
