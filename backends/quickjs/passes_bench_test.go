package quickjs

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// BenchmarkPasses measures what each rewriting pass costs a CPU-heavy
// script, apart from the backend: QuickJS's own command line (qjs -e) run
// by wazero with plain WASI, the module rewritten by a growing prefix of
// the pass list (guestPasses' order), on the reshape workload run five
// times in one process (reshape5) and on an empty script (boot, the
// engine's start-up). Each step's difference from the one before is that
// pass's cost; "parked" and "fresh" are the lists the two modes compile.
// The stop check grants wasmhost.StopGrant units per visit (no budget).
//
//	go test -run '^$' -bench Passes -benchtime 10x ./backends/quickjs/
func BenchmarkPasses(b *testing.B) {
	set, err := (*Options)(nil).settings()
	if err != nil {
		b.Fatal(err)
	}
	reshape, err := os.ReadFile("testdata/reshape.js")
	if err != nil {
		b.Fatal(err)
	}
	stack := jsguest.StackPass(set.stackBytes).Pass()
	fresh := set
	fresh.mode = ModeFresh
	for _, v := range []struct {
		name   string
		passes []wasmrewrite.Pass
	}{
		{"shipped", nil},
		{"stack", []wasmrewrite.Pass{stack}},
		{"stack+memsize", []wasmrewrite.Pass{stack, wasmrewrite.MemorySizePass}},
		{"stack+memsize+parkread", []wasmrewrite.Pass{stack, wasmrewrite.MemorySizePass, wasmrewrite.ParkReadPass}},
		{"fresh", guestPasses(fresh)}, // stack, memsize, preempt
		{"parked", guestPasses(set)},  // stack, memsize, park-read, preempt, export-globals, static tables
	} {
		wasm := quickJSWASM
		if v.passes != nil {
			if wasm, err = wasmrewrite.RewriteWith(quickJSWASM, v.passes...); err != nil {
				b.Fatal(err)
			}
		}
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(false))
		b.Cleanup(func() { _ = rt.Close(ctx) })
		if err := instantiateHost(ctx, rt); err != nil {
			b.Fatal(err)
		}
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		mod, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			b.Fatal(err)
		}
		src, err := json.Marshal(string(reshape))
		if err != nil {
			b.Fatal(err)
		}
		for _, w := range []struct{ name, script string }{
			{"boot", "0"},
			{"reshape5", "var src = " + string(src) + "; var r; for (var i = 0; i < 5; i++) r = (0, eval)(src); print(r.n);"},
		} {
			b.Run(v.name+"/"+w.name, func(b *testing.B) {
				// The script ran: qjs printed the completion value's n.
				var out strings.Builder
				cfg := wazero.NewModuleConfig().WithName("").WithStdout(&out).WithStderr(io.Discard).
					WithArgs("qjs", "--memory-limit", strconv.Itoa(256<<10), "-e", w.script)
				if m, err := rt.InstantiateModule(ctx, mod, cfg); m != nil || err != nil {
					if ee, ok := err.(*sys.ExitError); err != nil && (!ok || ee.ExitCode() != 0) {
						b.Fatal(err)
					}
				}
				if want := map[string]string{"boot": "", "reshape5": "10000\n"}[w.name]; out.String() != want {
					b.Fatalf("qjs printed %q, want %q", out.String(), want)
				}
				b.ResetTimer()
				cfg = cfg.WithStdout(io.Discard)
				for range b.N {
					m, err := rt.InstantiateModule(ctx, mod, cfg)
					if err != nil {
						if ee, ok := err.(*sys.ExitError); !ok || ee.ExitCode() != 0 {
							b.Fatal(err)
						}
					}
					if m != nil {
						_ = m.Close(ctx)
					}
				}
			})
		}
	}
}
