package typescript_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/bench/workloads"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/hostbench"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// nullBackend answers every request at once, so that a benchmark of the
// wrapper measures the transform and its cache only.
type nullBackend struct{}

func (nullBackend) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, FreshPerRun: true}
}

func (nullBackend) Evaluate(context.Context, spi.Request) (spi.Outcome, error) {
	return spi.Outcome{Kind: spi.KindOK, Value: json.RawMessage("null")}, nil
}

// BenchmarkTransform measures the type-stripping of the 47-line reshape
// workload (bench/workloads/reshape.ts): cold (no cache: every run
// transforms) and cached (every run after the first is a cache hit).
func BenchmarkTransform(b *testing.B) {
	script, ok := workloads.Reshape("typescript")
	require.True(b, ok)
	req := spi.Request{Script: script, Input: json.RawMessage("null")}
	for _, bc := range []struct {
		name string
		opts *typescript.Options
	}{
		{"cold", &typescript.Options{CacheEntries: -1}},
		{"cached", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ts, err := typescript.Wrap(nullBackend{}, bc.opts)
			require.NoError(b, err)
			ctx := context.Background()
			for b.Loop() {
				out, err := ts.Evaluate(ctx, req)
				if err != nil || out.Kind != spi.KindOK {
					b.Fatalf("%v %v", out, err)
				}
			}
		})
	}
}

// BenchmarkEcho measures the end-to-end echo through the effect on goja,
// as JavaScript and as TypeScript: the difference is the wrapper's cost on
// a cached script.
func BenchmarkEcho(b *testing.B) {
	for _, lang := range []string{"javascript", "typescript"} {
		b.Run(lang, func(b *testing.B) {
			js, err := goja.New(nil)
			require.NoError(b, err)
			var backend spi.Backend = js
			if lang == "typescript" {
				backend, err = typescript.Wrap(js, nil)
				require.NoError(b, err)
			}
			store := new(storage.MemoryStore)
			addr, err := store.Put([]byte("input"))
			require.NoError(b, err)
			eff, err := effect.New(store, backend, nil)
			require.NoError(b, err)
			defer eff.Close()
			call := effect.Call{Script: addr, Input: json.RawMessage(`{"a":1}`)}
			ctx := context.Background()
			for b.Loop() {
				if _, err := eff.Evaluate(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHostCall: one host call's round trip through the effect on
// goja-ts, awaited one by one and issued in one turn, and 8 calls of a
// 50 ms host function at once (internal/hostbench; its scripts are
// TypeScript too). On a QuickJS engine the wrapper adds the same.
func BenchmarkHostCall(b *testing.B) {
	hostbench.Run(b, func(tb testing.TB) spi.Backend {
		js, err := goja.New(nil)
		require.NoError(tb, err)
		ts, err := typescript.Wrap(js, nil)
		require.NoError(tb, err)
		return ts
	})
}
