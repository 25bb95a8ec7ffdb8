package starlarkwasm_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/fixtures"
	starfix "github.com/sandbank/sandbank/fixtures/starlark"
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
// while a bomb runs: twice the limit covers the portable linear memory (a
// Go slice that grows by doubling holds the old and the new buffer for a
// moment; on Linux the memory is a mapping, and only the touched pages
// count), and the instance, the module's own structures and the Go heap's
// slack take the rest.
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
	type result struct {
		out spi.Outcome
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(src), Input: []byte(`{}`), Limits: spi.Limits{WallClock: time.Second}})
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		took := time.Since(start)
		require.NoError(t, r.err)
		assert.Equal(t, spi.Limited(spi.LimitWallClock), r.out)
		assert.Less(t, took, time.Second+5*time.Second, "stopped within the wall clock + 5 s")
		t.Logf("stopped after %v", took.Round(time.Millisecond))
	case <-time.After(time.Second + 10*time.Second):
		t.Fatal("the loop was not stopped within its wall clock + 10 s")
	}
}

// oneGulpBombs ask the interpreter for a gigabyte or more in one
// operation, which it refuses itself (go.starlark.net's maxAlloc guard)
// before the memory is touched: past any memory limit of this engine.
var oneGulpBombs = map[string]string{
	"string":        "def main(input):\n    return len(\"x\" * (1 << 30))\n",
	"string count":  "def main(input):\n    return len(\"x\" * (1 << 31))\n",
	"list":          "def main(input):\n    return len([0] * (1 << 30))\n",
	"tuple":         "def main(input):\n    return len((0, 1) * (1 << 29))\n",
	"bytes":         "def main(input):\n    return len(b\"x\" * (1 << 30))\n",
	"augmented":     "def main(input):\n    x = [1]\n    x *= 1 << 30\n    return len(x)\n",
	"in a function": "def grow(n):\n    return \"ab\" * n\n\ndef main(input):\n    return len(grow(1 << 29))\n",
}

// TestBombsUnderLoadAreTheMemoryLimit: every allocation bomb, those the
// guest's Go runtime runs out of memory on and those the interpreter
// refuses in one gulp, ends in limitExceeded memory, alone and with many
// running at once among ordinary runs; never a script error.
func TestBombsUnderLoadAreTheMemoryLimit(t *testing.T) {
	b, err := starlarkwasm.New(nil)
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Warm(context.Background()))
	bomb, err := starfix.Set().Script("allocation_bomb")
	require.NoError(t, err)
	bombs := map[string]string{"fixture": string(bomb), "doubling": "def main(input):\n    s = \"x\"\n    for i in range(40):\n        s = s + s\n    return len(s)\n"}
	for name, src := range measuredBombs {
		bombs["measured "+name] = src
	}
	for name, src := range oneGulpBombs {
		bombs["one gulp "+name] = src
	}
	// A wall clock no loaded machine reaches: the outcome is the memory's.
	limits := spi.Limits{WallClock: 5 * time.Minute, MemoryBytes: 32 << 20}
	run := func(src string) (spi.Outcome, error) {
		return b.Evaluate(context.Background(), spi.Request{Script: []byte(src), Input: []byte(`{"n":1}`), Limits: limits})
	}
	for name, src := range oneGulpBombs {
		out, err := run(src)
		require.NoError(t, err, name)
		assert.Equal(t, spi.Limited(spi.LimitMemory), out, "alone: %s", name)
	}

	const concurrent = 48 // bombs, among half as many ordinary runs
	names := make([]string, 0, len(bombs))
	for name := range bombs {
		names = append(names, name)
	}
	var wg sync.WaitGroup
	for i := range concurrent {
		name := names[i%len(names)]
		wg.Go(func() {
			out, err := run(bombs[name])
			assert.NoError(t, err, name)
			assert.Equal(t, spi.Limited(spi.LimitMemory), out, "under load: %s", name)
		})
		if i%2 == 0 {
			wg.Go(func() {
				out, err := run("def main(input):\n    return input\n")
				assert.NoError(t, err)
				assert.Equal(t, spi.OK([]byte(`{"n":1}`)), out)
			})
		}
	}
	wg.Wait()
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
