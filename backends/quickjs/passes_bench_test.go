package quickjs

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// BenchmarkPasses measures what each rewriting pass costs a CPU-heavy
// script, apart from the backend: QuickJS's own command line (qjs -e) run
// by wazero with plain WASI, the module rewritten by a growing prefix of
// the pass list (guestPasses' order), running the reshape workload five
// times in one process (reshape), and an empty script (boot: the engine's
// start-up). Each step's difference from the one before is that pass's
// cost; "fresh" and "parked" are the lists the two modes compile. The
// variants run in rotating order, one run each per iteration, so that the
// machine's noise hits them alike; each reports the median of its runs
// (reshape: per reshape, a fifth of a run). The stop check grants
// wasmhost.StopGrant units per visit (no budget).
//
//	go test -run '^$' -bench Passes -benchtime 20x ./backends/quickjs/
func BenchmarkPasses(b *testing.B) {
	set, err := (*Options)(nil).settings()
	if err != nil {
		b.Fatal(err)
	}
	reshape, err := os.ReadFile("testdata/reshape.js")
	if err != nil {
		b.Fatal(err)
	}
	src, err := json.Marshal(string(reshape))
	if err != nil {
		b.Fatal(err)
	}
	stack := jsguest.StackPass(set.stackBytes).Pass()
	fresh := set
	fresh.mode = ModeFresh
	variants := []struct {
		name   string
		passes []wasmrewrite.Pass
	}{
		{"shipped", nil},
		{"stack", []wasmrewrite.Pass{stack}},
		{"stack+memsize", []wasmrewrite.Pass{stack, wasmrewrite.MemorySizePass}},
		{"stack+memsize+parkread", []wasmrewrite.Pass{stack, wasmrewrite.MemorySizePass, wasmrewrite.ParkReadPass}},
		{"fresh", guestPasses(fresh)}, // stack, memsize, preempt
		{"parked", guestPasses(set)},  // stack, memsize, park-read, preempt, export-globals, static tables
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(false))
	b.Cleanup(func() { _ = rt.Close(ctx) })
	if err := instantiateHost(ctx, rt); err != nil {
		b.Fatal(err)
	}
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mods := make([]wazero.CompiledModule, len(variants))
	for i, v := range variants {
		wasm := quickJSWASM
		if v.passes != nil {
			if wasm, err = wasmrewrite.RewriteWith(quickJSWASM, v.passes...); err != nil {
				b.Fatal(err)
			}
		}
		if mods[i], err = rt.CompileModule(ctx, wasm); err != nil {
			b.Fatal(err)
		}
	}
	// run runs script once on mod and returns what qjs printed.
	run := func(b *testing.B, mod wazero.CompiledModule, script string) string {
		var out strings.Builder
		cfg := wazero.NewModuleConfig().WithName("").WithStdout(&out).WithStderr(io.Discard).
			WithArgs("qjs", "--memory-limit", strconv.Itoa(256<<10), "-e", script)
		m, err := rt.InstantiateModule(ctx, mod, cfg)
		if ee, ok := err.(*sys.ExitError); err != nil && (!ok || ee.ExitCode() != 0) {
			b.Fatal(err)
		}
		if m != nil {
			_ = m.Close(ctx)
		}
		return out.String()
	}
	for _, w := range []struct {
		name, script, want string
		per                int
	}{
		{"boot", "0", "", 1},
		{"reshape", "var src = " + string(src) + "; var r; for (var i = 0; i < 5; i++) r = (0, eval)(src); print(r.n);", "10000\n", 5},
	} {
		b.Run(w.name, func(b *testing.B) {
			d := make([][]time.Duration, len(variants))
			b.ResetTimer()
			for n := range b.N {
				for k := range variants {
					i := (n + k) % len(variants)
					t0 := time.Now()
					got := run(b, mods[i], w.script)
					d[i] = append(d[i], time.Since(t0)/time.Duration(w.per))
					if got != w.want { // the script ran: qjs printed the value's n
						b.Fatalf("%s: qjs printed %q, want %q", variants[i].name, got, w.want)
					}
				}
			}
			b.StopTimer()
			for i, v := range variants {
				sort.Slice(d[i], func(x, y int) bool { return d[i][x] < d[i][y] })
				b.ReportMetric(float64(d[i][len(d[i])/2].Microseconds())/1000, v.name+"-ms")
			}
		})
	}
}
