package quickjs

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// growthRun runs script on b with input and a memory limit, with a log
// sink so that the outcome carries the run's stats.
func growthRun(t *testing.T, b *Backend, script, input string, memory int64) spi.Outcome {
	t.Helper()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte(input),
		Limits: spi.Limits{WallClock: 20 * time.Second, MemoryBytes: memory}, Logs: &logSink{}})
	require.NoError(t, err)
	return out
}

// instances records the instance every run of b gets, and the number of
// boots and reuses so far.
type instances struct {
	mu   sync.Mutex
	got  []*instance
	b    *Backend
	hook func(*instance) // called first, for the run's instance
}

func watch(b *Backend) *instances {
	w := &instances{b: b}
	b.onRun = func(inst *instance) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.hook != nil {
			w.hook(inst)
		}
		w.got = append(w.got, inst)
	}
	return w
}

func (w *instances) last(n int) []*instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*instance(nil), w.got[len(w.got)-n:]...)
}

// The secret run 1 plants: built at run time, so that neither script's
// source holds it.
const (
	plantSecret = `globalThis.s = (["S3", "CR", "3T"].join("") + "-" + input + ";").repeat(1 << 19); s.length` // 6 MiB
	secretInput = `4711`
)

var secret = []byte("S3CR3T-4711;")

// TestParkedGrowthLeavesNothing is the guarantee behind keeping a grown
// instance: run 1 grows the memory and fills it, above the park point,
// with a secret; run 2, on the SAME instance (no boot between them),
// finds linear memory holding nothing of it, before it starts, and gives
// the result and the memory high-water mark a fresh instance gives.
func TestParkedGrowthLeavesNothing(t *testing.T) {
	const memory = DefaultMemoryBytes // the pool Warm fills
	fresh := newBackend(t, &Options{Mode: ModeFresh})
	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	require.NoError(t, b.Warm(t.Context()))
	w := watch(b)
	var planted, leaked, grown bool
	w.hook = func(inst *instance) { // the instance is parked, as run 1 left it
		if !inst.Parked() || inst.Cur != nil {
			return
		}
		mem := inst.mod.Memory()
		buf, _ := mem.Read(0, mem.Size())
		if len(buf) > len(inst.memory) && bytes.Contains(buf[len(inst.memory):], secret) {
			planted = true
		}
	}
	b.restored = func(inst *instance) {
		mem := inst.mod.Memory()
		buf, _ := mem.Read(0, mem.Size())
		grown = grown || len(buf) > len(inst.memory)
		leaked = leaked || bytes.Contains(buf, secret)
	}
	// Run 2 grows the memory again, reads it, and reports what it sees.
	observer := `const t = "o".repeat(1 << 20);
		const a = new Uint8Array(1 << 20); let nonzero = 0; for (let i = 0; i < a.length; i += 4096) nonzero += a[i];
		[typeof globalThis.s, t.length, nonzero, Object.keys(globalThis).length]`
	want := growthRun(t, fresh, observer, `null`, memory)
	require.Equal(t, spi.KindOK, want.Kind, want.Message)

	boots, reuses := b.boots.Load(), b.reuses.Load()
	first := growthRun(t, b, plantSecret, secretInput, memory)
	require.Equal(t, spi.KindOK, first.Kind, first.Message)
	got := growthRun(t, b, observer, `null`, memory)
	insts := w.last(2)
	require.True(t, insts[0] == insts[1], "run 2 must resume run 1's instance")
	assert.Equal(t, boots, b.boots.Load(), "no boot between the runs")
	assert.Equal(t, reuses+2, b.reuses.Load())
	require.True(t, planted, "run 1 must leave the secret above the park point, or the test proves nothing")
	require.True(t, grown, "run 2 must resume a grown memory, or the test proves nothing")
	assert.False(t, leaked, "run 1's secret is in the memory run 2 starts with")
	assert.Equal(t, want.Kind, got.Kind)
	assert.Equal(t, string(want.Value), string(got.Value))
	assert.Equal(t, want.Stats.MemoryPeakBytes, got.Stats.MemoryPeakBytes, "the run's own high-water mark, as on a fresh instance")
	assert.Less(t, got.Stats.MemoryPeakBytes, int64(insts[1].mod.Memory().Size()), "run 2 used less than run 1 grew: its peak is its own")
}

// TestParkedReshapeKeepsInstance: CPU-heavy runs that grow the memory
// (the reshape workload: 320 KiB to over 1 MiB) resume their parked
// instance instead of booting a new one, and give the fresh result.
func TestParkedReshapeKeepsInstance(t *testing.T) {
	script, err := os.ReadFile("testdata/reshape.js")
	require.NoError(t, err)
	fresh := newBackend(t, &Options{Mode: ModeFresh})
	want := growthRun(t, fresh, string(script), `null`, DefaultMemoryBytes)
	require.Equal(t, spi.KindOK, want.Kind, want.Message)

	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	require.NoError(t, b.Warm(t.Context()))
	var park int64
	b.restored = func(inst *instance) { park = int64(len(inst.memory)) }
	boots, reuses := b.boots.Load(), b.reuses.Load()
	const runs = 5
	for i := range runs {
		got := growthRun(t, b, string(script), `null`, DefaultMemoryBytes)
		require.Equal(t, want.Kind, got.Kind, "run %d: %s", i, got.Message)
		require.Equal(t, string(want.Value), string(got.Value), "run %d", i)
		require.Greater(t, got.Stats.MemoryPeakBytes, park, "run %d must grow the memory, or the test proves nothing", i)
	}
	assert.Equal(t, boots, b.boots.Load(), "reshape runs must not boot instances")
	assert.Equal(t, reuses+runs, b.reuses.Load())
}

// TestParkedGrowthKeepsTheLimit: the memory limit holds exactly on a
// grown instance. A run that exceeds it still ends limitExceeded memory,
// and after a big run the next run can allocate exactly as much as on a
// fresh instance (the real memory the big run left counts for nothing,
// and the limit is not lowered by it).
func TestParkedGrowthKeepsTheLimit(t *testing.T) {
	const memory = 8 << 20
	big := `globalThis.s = "y".repeat(5 << 20); s.length`
	bomb := `globalThis.h = []; for (;;) h.push(new Array(1024).fill(1));`
	probe := `const h = []; try { for (;;) h.push(new Array(1024).fill(1)); } catch (e) {} const n = h.length; h.length = 0; n`
	fresh := newBackend(t, &Options{Mode: ModeFresh})
	want := growthRun(t, fresh, probe, `null`, memory)
	require.Equal(t, spi.KindOK, want.Kind, want.Message)

	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	w := watch(b)
	require.Equal(t, spi.KindOK, growthRun(t, b, `1`, `null`, memory).Kind) // boots the pool's instance
	for _, then := range []string{bomb, probe} {
		require.Equal(t, spi.KindOK, growthRun(t, b, big, `null`, memory).Kind)
		got := growthRun(t, b, then, `null`, memory)
		insts := w.last(2)
		require.True(t, insts[0] == insts[1], "the run after the big one must resume its grown instance")
		if then == bomb {
			assert.Equal(t, spi.Limited(spi.LimitMemory).Kind, got.Kind, got.Message)
			assert.Equal(t, spi.LimitMemory, got.Limit)
		} else {
			assert.Equal(t, string(want.Value), string(got.Value), "allocated after a big run, against a fresh instance")
		}
		assert.LessOrEqual(t, int64(insts[1].mod.Memory().Size()), int64(memory), "the real memory stays within the limit")
	}
}

// BenchmarkRestoreGrownMemory is the memory part of a restore after a
// run that grew the memory: zeroing above the park point and copying the
// park point's bytes back, on an instance a reshape run left at its real
// size (and after a run that touched 64 MiB: its first restore gives the
// pages back, the ones measured find none). One run's figure, no
// assertion:
//
//	go test -run '^$' -bench BenchmarkRestoreGrownMemory ./backends/quickjs/
func BenchmarkRestoreGrownMemory(b *testing.B) {
	script, err := os.ReadFile("testdata/reshape.js")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, script string }{
		{"echo", `input`}, // no growth: the copy alone, as before issue 17
		{"reshape", string(script)},
		{"64MiB", `const a = new Uint8Array(64 << 20); for (let i = 0; i < a.length; i += 4096) a[i] = 1; a.length`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			be, err := New(&Options{Mode: ModeParked, PoolSize: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			limits := spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 128 << 20}
			out, err := be.Evaluate(context.Background(), spi.Request{Script: []byte(tc.script), Input: []byte(`null`), Limits: limits})
			if err != nil || out.Kind != spi.KindOK {
				b.Fatalf("%+v %v", out, err)
			}
			p := be.pools.For(limits.MemoryBytes)
			inst, ok := p.Take()
			if !ok {
				b.Fatal("the run's instance is not parked")
			}
			defer p.Put(inst)
			memory := inst.mod.Memory()
			b.ResetTimer()
			for range b.N {
				if !inst.restoreMemory(memory) {
					b.Fatal("not restored")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(memory.Size()-uint32(len(inst.memory)))/(1<<20), "MiB-zeroed")
			b.ReportMetric(float64(len(inst.memory))/(1<<10), "KiB-copied")
		})
	}
}
