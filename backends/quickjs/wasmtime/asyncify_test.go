//go:build cgo

package wasmtime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	wt "github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/sandbank/sandbank/spi"
)

// BenchmarkAsyncify measures what parking on wasmtime would cost every
// script (docs/design.md, "What was decided against"): the module the
// backend runs (the stack pass applied), rewritten by binaryen's asyncify
// pass with fd_read as the only import that unwinds (where a parked
// instance would wait for its next run) and optimised after it as
// binaryen advises (-O2), against the module as run, and against the same
// -O2 without asyncify (so that the optimisation's own effect is apart).
// No unwinding happens: this is the pass's cost on a run that never
// parks. Each variant runs reshape and echo on the backend alone, in
// rotating order, and reports the median of the script's time
// (Stats.ScriptTime) and of its start-up (Stats.Startup: instantiating
// and QuickJS's boot, what parking would save). It needs binaryen's wasm-opt on PATH (Debian: apt-get install
// binaryen; measured with version 108) and takes a few minutes to rewrite:
//
//	go test -run '^$' -bench BenchmarkAsyncify -benchtime 30x ./backends/quickjs/wasmtime/
func BenchmarkAsyncify(b *testing.B) {
	wasmOpt, err := exec.LookPath("wasm-opt")
	if err != nil {
		b.Skip("binaryen's wasm-opt is not on PATH")
	}
	g := guarded()
	if g.err != nil {
		b.Fatal(g.err)
	}
	dir := b.TempDir()
	in := filepath.Join(dir, "guarded.wasm")
	if err := os.WriteFile(in, g.wasm, 0o600); err != nil {
		b.Fatal(err)
	}
	features := []string{"--enable-bulk-memory", "--enable-sign-ext", "--enable-nontrapping-float-to-int", "--enable-mutable-globals"}
	optimise := func(name string, args ...string) []byte {
		out := filepath.Join(dir, name+".wasm")
		cmd := exec.Command(wasmOpt, append(append(append([]string{in}, features...), args...), "-o", out)...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("wasm-opt %s: %v: %s", name, err, msg)
		}
		w, err := os.ReadFile(out)
		if err != nil {
			b.Fatal(err)
		}
		return w
	}
	reshape, err := os.ReadFile("../testdata/reshape.js")
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct {
		name string
		wasm []byte // nil: the module as run
	}{
		{"asrun", nil},
		{"O2", optimise("O2", "-O2")},
		{"asyncify+O2", optimise("asyncify", "--asyncify", "--pass-arg=asyncify-imports@wasi_snapshot_preview1.fd_read", "-O2")},
	}
	bes := make([]*Backend, len(variants))
	for i, v := range variants {
		bes[i] = moduleBackend(b, filepath.Join(dir, "cache-"+v.name), v.wasm)
	}
	for _, w := range []struct{ name, script, input string }{
		{"reshape", string(reshape), "null"},
		{"echo", "input", `{"a":1,"b":"x"}`},
	} {
		b.Run(w.name, func(b *testing.B) {
			req := spi.Request{Script: []byte(w.script), Input: []byte(w.input), Limits: spi.Limits{WallClock: time.Minute}, Logs: discard{}}
			script := make([][]time.Duration, len(variants))
			startup := make([][]time.Duration, len(variants))
			b.ResetTimer()
			for n := range b.N {
				for k := range variants {
					i := (n + k) % len(variants)
					out, err := bes[i].Evaluate(context.Background(), req)
					if err != nil || out.Kind != spi.KindOK {
						b.Fatal(variants[i].name, out, err)
					}
					script[i] = append(script[i], out.Stats.ScriptTime)
					startup[i] = append(startup[i], out.Stats.Startup)
				}
			}
			b.StopTimer()
			for i, v := range variants {
				b.ReportMetric(p50ms(script[i]), v.name+"-script-ms")
				b.ReportMetric(p50ms(startup[i]), v.name+"-startup-ms")
			}
		})
	}
}

// moduleBackend is a warmed backend without fuel that runs wasm (nil: the
// module as the backend runs it, from the default cache) under a module
// key of its own (key, a cache directory that stays empty: the module is
// in the process's table before the backend asks for it), with the stack
// layout of the module as run: the rewritings measured here keep linear
// memory's layout.
func moduleBackend(b *testing.B, key string, wasm []byte) *Backend {
	b.Helper()
	o := &Options{}
	if wasm != nil {
		o.CacheDir = key
		rt, err := processRuntime(false)
		if err != nil {
			b.Fatal(err)
		}
		k := moduleKey{fuel: false, cacheDir: key}
		modulesMu.Lock()
		if _, ok := modules[k]; !ok {
			m := &compiledModule{done: make(chan struct{})}
			m.once.Do(func() {})
			m.mod, m.err = wt.NewModule(rt.engine, wasm)
			close(m.done)
			modules[k] = m
		}
		modulesMu.Unlock()
	}
	be, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	if err := be.Warm(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	return be
}
