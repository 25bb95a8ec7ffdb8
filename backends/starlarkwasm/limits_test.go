package starlarkwasm_test

import (
	"context"
	"fmt"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/spi"
)

// The two bombs measured on the in-process engine (issue 22): one list
// and one string repetition, each a single built-in step, which stalled
// that engine's whole process for 21 s at 3.9 GB and reached 1 GB.
var measuredBombs = map[string]string{
	"list":   "def main(input):\n    return len([0] * 100000000)\n",
	"string": "def main(input):\n    return len(\"x\" * 1000000000)\n",
}

// bombLimits are the limits the bombs run under.
var bombLimits = spi.Limits{WallClock: time.Second, MemoryBytes: 32 << 20}

// bombOverhead is what the host may grow by beyond twice the memory limit
// while a bomb runs: the linear memory is a Go slice that grows by
// doubling, so the old and the new buffer are both held for a moment
// (twice the limit at most), and the instance, the module's own
// structures and the Go heap's slack take the rest.
const bombOverhead = 48 << 20

// TestMeasuredBombsEndTyped runs each bomb through the kit's
// allocation_bomb case (its host memory measurement: the peak resident
// set over the level before the run), and then directly, timed: each
// must end in limitExceeded memory within the wall clock plus a wide
// margin for a loaded machine, with the host's growth under twice the
// limit plus bombOverhead (the kit's own bound is 4 × the limit + 64 MiB).
func TestMeasuredBombsEndTyped(t *testing.T) {
	factory := func() (spi.Backend, error) { return starlarkwasm.New(nil) }
	// Compile first: the process-wide compilation cache then serves every
	// backend, and the compile's own memory is not counted as the bomb's.
	warm, err := starlarkwasm.New(nil)
	require.NoError(t, err)
	require.NoError(t, warm.Warm(context.Background()))
	require.NoError(t, warm.Close())
	for name, src := range measuredBombs {
		t.Run(name, func(t *testing.T) {
			set, err := fixtures.New("starlark", ".star", fstest.MapFS{"allocation_bomb.star": {Data: []byte(src)}})
			require.NoError(t, err)
			rep, err := conformance.Check(context.Background(), factory, &conformance.Options{
				Fixtures: &set, Cases: []string{"allocation_bomb"}, Limits: bombLimits,
			})
			require.NoError(t, err)
			require.Len(t, rep.Cases, 1)
			c := rep.Cases[0]
			require.Equal(t, conformance.StatusPass, c.Status, c.Reason)
			growth := figure(t, c, "hostGrowth")
			bound := float64(2*bombLimits.MemoryBytes+bombOverhead) / (1 << 20)
			assert.LessOrEqual(t, growth, bound, "host growth in MiB")
			t.Logf("host grew by %.1f MiB (bound %.0f MiB)", growth, bound)

			b, err := starlarkwasm.New(nil)
			require.NoError(t, err)
			defer b.Close()
			require.NoError(t, b.Warm(context.Background()))
			start := time.Now()
			out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(src), Input: []byte(`{}`), Limits: bombLimits})
			took := time.Since(start)
			require.NoError(t, err)
			assert.Equal(t, spi.Limited(spi.LimitMemory), out)
			assert.Less(t, took, bombLimits.WallClock+5*time.Second, "the bomb must end within its wall clock + 5 s")
			t.Logf("ended in %v", took.Round(time.Millisecond))
		})
	}
}

// TestLoopStoppedByWallClock: a 10^7-iteration loop under a step budget
// that would let it finish is stopped by the hard wall clock (1 s), and
// Evaluate returns within it plus a wide margin.
func TestLoopStoppedByWallClock(t *testing.T) {
	b, err := starlarkwasm.New(&starlarkwasm.Options{MaxSteps: 1 << 40})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Warm(context.Background()))
	src := "def main(input):\n    n = 0\n    for i in range(10000000):\n        n += i * i % 7\n    return n\n"
	start := time.Now()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(src), Input: []byte(`{}`), Limits: spi.Limits{WallClock: time.Second}})
	took := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
	assert.Less(t, took, time.Second+5*time.Second, "stopped within the wall clock + 5 s")
	t.Logf("stopped after %v", took.Round(time.Millisecond))
}

func figure(t *testing.T, c conformance.CaseResult, name string) float64 {
	t.Helper()
	for _, f := range c.Evidence {
		if f.Name == name {
			return f.Value
		}
	}
	require.Fail(t, fmt.Sprintf("case %s has no figure %s", c.Name, name))
	return 0
}
