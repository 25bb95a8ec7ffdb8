package starlarkwasm

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/bench/workloads"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// BenchmarkGuestPasses: the reshape workload in a new instance of the
// guest per iteration, outside the effect and the backend, with the
// rewriting passes added one at a time, to price each (issue 43):
//
//	go test -run '^$' -bench GuestPasses -count 5 ./backends/starlarkwasm
//
// "none" is the guest as built (no stop check: no hard clock, never a
// mode of the backend); "preempt" is ModeFresh's module; "park" is
// ModeParked's (parkPasses: the park-read wrapper only loops when a host
// restores with ParkRetry, which plain WASI never does). Each variant
// compiles its module first, outside the timer.
func BenchmarkGuestPasses(b *testing.B) {
	src, ok := workloads.Reshape("starlark")
	if !ok {
		b.Fatal("no starlark reshape")
	}
	nonce, err := wasmguest.NewNonce()
	if err != nil {
		b.Fatal(err)
	}
	payload := wasmguest.SizedPayload(nonce, src, []byte("null"), false)
	for _, v := range []struct {
		name   string
		passes []wasmrewrite.Pass
	}{
		{"none", nil},
		{"preempt", passes(false)},
		{"memsize+preempt", []wasmrewrite.Pass{wasmrewrite.MemorySizePass, wasmrewrite.PreemptPass}},
		{"park", passes(true)},
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			wasm, err := wasmrewrite.RewriteWith(guestWASM, v.passes...)
			if err != nil {
				b.Fatal(err)
			}
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithDebugInfoEnabled(false))
			b.Cleanup(func() { _ = rt.Close(ctx) })
			wasi_snapshot_preview1.MustInstantiate(ctx, rt)
			if len(v.passes) > 0 {
				if err := wasmhost.InstantiateStopCheck(ctx, rt); err != nil {
					b.Fatal(err)
				}
			}
			compiled, err := rt.CompileModule(ctx, wasm)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				stdout := wasmguest.NewStdout(nonce, 1<<20, nil)
				var stderr bytes.Buffer
				cfg := wasmhost.Isolate(wazero.NewModuleConfig()).WithName("").
					WithArgs("guest", "1000000000", "1048576", "29360128", "0").
					WithStdin(bytes.NewReader(payload)).WithStdout(stdout).WithStderr(&stderr)
				mod, err := rt.InstantiateModule(ctx, compiled, cfg)
				if mod != nil {
					_ = mod.Close(ctx)
				}
				var exit *sys.ExitError
				if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 0) {
					b.Fatalf("%v; stderr: %s", err, stderr.Bytes())
				}
				if stdout.Record().Kind != wasmguest.RecResult {
					b.Fatalf("no result record; stderr: %s", stderr.Bytes())
				}
			}
		})
	}
}
