package starlarkwasm_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/backends/starlarknative"
	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/bench/workloads"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/hostbench"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// The Starlark engines side by side, through the effect, as sandbank
// bench measures them: go test -bench . ./backends/starlarkwasm
// (starlark-native where it can run: starlarknative.Available).
var benchEngines = append([]struct {
	name    string
	factory spi.Factory
}{
	{"starlark", func() (spi.Backend, error) { return starlark.New(nil) }},
	{"starlark-wasm", func() (spi.Backend, error) { return starlarkwasm.New(nil) }},
	{"starlark-wasm-fresh", func() (spi.Backend, error) {
		return starlarkwasm.New(&starlarkwasm.Options{Mode: starlarkwasm.ModeFresh})
	}},
}, nativeEngines()...)

// nativeEngines is starlark-native where it can run.
func nativeEngines() []struct {
	name    string
	factory spi.Factory
} {
	if starlarknative.Available() != nil {
		return nil
	}
	return []struct {
		name    string
		factory spi.Factory
	}{{starlarknative.Engine, func() (spi.Backend, error) { return starlarknative.New(nil) }}}
}

const echoScript = "def main(input):\n    return input\n"

// killScript loops until its wall clock stops it.
const killScript = "def main(input):\n    for _ in range(1 << 62):\n        pass\n"

func benchEffect(b *testing.B, factory spi.Factory, src []byte, limits spi.Limits) (*effect.Effect, record.Address) {
	b.Helper()
	backend, err := factory()
	require.NoError(b, err)
	if w, ok := backend.(spi.Warmer); ok {
		require.NoError(b, w.Warm(context.Background()))
	}
	scripts := new(storage.MemoryStore)
	addr, err := scripts.Put(src)
	require.NoError(b, err)
	e, err := effect.New(scripts, backend, &effect.Options{Limits: limits})
	require.NoError(b, err)
	b.Cleanup(func() { _ = e.Close() })
	return e, addr
}

// BenchmarkEcho: one echo per iteration (starlark-wasm restores a parked
// instance; starlark-wasm-fresh boots the Go runtime in a new instance,
// which is most of its time).
func BenchmarkEcho(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.name, func(b *testing.B) {
			e, addr := benchEffect(b, eng.factory, []byte(echoScript), spi.Limits{})
			call := effect.Call{Script: addr, Input: json.RawMessage(`{"a":1,"b":"x"}`)}
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := e.Evaluate(context.Background(), call); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
		})
	}
}

// BenchmarkReshape: the shared reshape workload (bench/workloads), with a
// 60 s wall clock: on starlark-wasm it takes seconds (the interpreter runs
// about twenty times slower compiled to WebAssembly).
func BenchmarkReshape(b *testing.B) {
	src, ok := workloads.Reshape("starlark")
	require.True(b, ok)
	for _, eng := range benchEngines {
		b.Run(eng.name, func(b *testing.B) {
			e, addr := benchEffect(b, eng.factory, src, spi.Limits{WallClock: time.Minute})
			call := effect.Call{Script: addr, Input: json.RawMessage(`null`)}
			for b.Loop() {
				if _, err := e.Evaluate(context.Background(), call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKill: a runaway loop under a 50 ms wall clock; each iteration
// lasts until the run ended in its limit (wall clock, or the step budget
// when it runs out first).
func BenchmarkKill(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.name, func(b *testing.B) {
			e, addr := benchEffect(b, eng.factory, []byte(killScript), spi.Limits{WallClock: 50 * time.Millisecond})
			call := effect.Call{Script: addr, Input: json.RawMessage(`{}`)}
			for b.Loop() {
				if _, err := e.Evaluate(context.Background(), call); err == nil {
					b.Fatal("the loop ended without a limit")
				}
			}
		})
	}
}

// BenchmarkHostCall: one host call's round trip through the effect, the
// median over a run of calls each made on the last answer
// (internal/hostbench, as for the JavaScript engines).
func BenchmarkHostCall(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.name, func(b *testing.B) {
			hostbench.RunSequential(b, func(tb testing.TB) spi.Backend {
				be, err := eng.factory()
				if err != nil {
					tb.Fatal(err)
				}
				return be
			}, hostbench.StarlarkSequential)
		})
	}
}
