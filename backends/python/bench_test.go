//go:build linux

package python_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/bench/workloads"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

var benchInput = json.RawMessage(`{"text":"echo ✓ é","n":7,"list":[1,"two",null,true,false,{"k":[]}]}`)

// newEffect returns an effect over a default python backend and the
// address of src in its store, or skips.
func newEffect(b *testing.B, src []byte) (*effect.Effect, record.Address) {
	b.Helper()
	if err := python.Available(nil); err != nil {
		b.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	backend, err := python.New(nil)
	require.NoError(b, err)
	scripts := new(storage.MemoryStore)
	addr, err := scripts.Put(src)
	require.NoError(b, err)
	e, err := effect.New(scripts, backend, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = e.Close() })
	return e, addr
}

// run times every iteration and reports the median as p50-ms: a run is a
// process start, whose mean a slow outlier on a loaded machine skews.
func run(b *testing.B, src []byte, input json.RawMessage) {
	e, addr := newEffect(b, src)
	ctx := context.Background()
	call := effect.Call{Script: addr, Input: input}
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := e.Evaluate(ctx, call); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkEcho: one echo through the effect: a new sandbox and a new
// interpreter per run (no pre-forked interpreter).
func BenchmarkEcho(b *testing.B) { run(b, []byte("input"), benchInput) }

// BenchmarkReshape: bench/workloads' reshape.py through the effect.
func BenchmarkReshape(b *testing.B) {
	script, _ := workloads.Reshape("python")
	run(b, script, json.RawMessage("null"))
}

// discardLogs is a log sink that keeps nothing: a request with a sink gets
// its Stats (ScriptTime, from the script's start to Evaluate's return).
type discardLogs struct{}

func (discardLogs) Log(spi.LogLevel, spi.LogStream, string) bool { return true }

// BenchmarkKill: how long after its wall clock a run stopped by it
// returns (Stats.ScriptTime minus the wall clock: the SIGKILL of the
// sandbox's process group and Evaluate's return), for a runaway loop and
// for one long native call (a backtracking regex; sum over a range, one
// C loop; both without memory, unlike "x" * 10**10, which would touch
// gigabytes on a shared machine). It reports p50 and p99 in ms; run it
// with -benchtime 20x.
func BenchmarkKill(b *testing.B) {
	if err := python.Available(nil); err != nil {
		b.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	backend, err := python.New(nil)
	require.NoError(b, err)
	const wall = 100 * time.Millisecond
	for _, c := range []struct{ name, script string }{
		{"loop", "while True:\n    pass"},
		{"regex", "import re\nre.match(r'(a*)*b', 'a' * 64)"},
		{"sum", "sum(range(10**12))"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var late []time.Duration
			for b.Loop() {
				out, err := backend.Evaluate(context.Background(), spi.Request{Script: []byte(c.script), Input: json.RawMessage("null"),
					Limits: spi.Limits{WallClock: wall, MemoryBytes: 64 << 20}, Logs: discardLogs{}})
				require.NoError(b, err)
				require.Equal(b, spi.LimitWallClock, out.Limit, "%+v", out)
				late = append(late, out.Stats.ScriptTime-wall)
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(late[len(late)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkNew: a New after the first in the process (the probe and the
// self-test are the first one's; this one checks the tools and builds the
// filter).
func BenchmarkNew(b *testing.B) {
	if err := python.Available(nil); err != nil {
		b.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	_, err := python.New(nil)
	require.NoError(b, err)
	for b.Loop() {
		_, err := python.New(nil)
		require.NoError(b, err)
	}
}
