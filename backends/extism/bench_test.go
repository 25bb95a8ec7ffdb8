package extism_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/spi"
)

var benchInput = json.RawMessage(`{"text":"echo ✓ é","n":7,"list":[1,"two",null,true,false,{"k":[]}]}`)

// BenchmarkFreshEcho: one echo through the effect; the module is compiled
// once (before the timer), and every iteration creates, runs and closes a
// NEW instance.
func BenchmarkFreshEcho(b *testing.B) {
	backend, err := extism.New(nil)
	require.NoError(b, err)
	scripts := effect.NewMemoryStore()
	plugin, err := wasm.Set().Script("echo")
	require.NoError(b, err)
	addr, err := scripts.Put(plugin)
	require.NoError(b, err)
	e, err := effect.New(scripts, backend, nil)
	require.NoError(b, err)
	defer e.Close()
	ctx := context.Background()
	call := effect.Call{Script: addr, Input: benchInput}
	_, err = e.Evaluate(ctx, call) // compile
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileOnce: the first run of a module, which compiles it.
// "cold" uses a new backend each time (nothing cached: the Extism kernel
// and the module are compiled to machine code); "shared-code" misses the
// module cache (a new memory cap each time) but finds the machine code in
// the backend's shared compilation cache.
func BenchmarkCompileOnce(b *testing.B) {
	plugin, err := wasm.Set().Script("echo")
	require.NoError(b, err)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			backend, err := extism.New(nil)
			if err != nil {
				b.Fatal(err)
			}
			o, err := backend.Evaluate(ctx, spi.Request{Script: plugin, Input: benchInput,
				Limits: spi.Limits{WallClock: effect.DefaultWallClock, MemoryBytes: effect.DefaultMemoryBytes}})
			if err != nil || o.Kind != spi.KindOK {
				b.Fatal(o, err)
			}
			_ = backend.Close()
		}
	})
	b.Run("shared-code", func(b *testing.B) {
		backend, err := extism.New(nil)
		require.NoError(b, err)
		defer backend.Close()
		mem := effect.DefaultMemoryBytes
		b.ReportAllocs()
		for b.Loop() {
			mem += 65536
			o, err := backend.Evaluate(ctx, spi.Request{Script: plugin, Input: benchInput,
				Limits: spi.Limits{WallClock: effect.DefaultWallClock, MemoryBytes: mem}})
			if err != nil || o.Kind != spi.KindOK {
				b.Fatal(o, err)
			}
		}
	})
}
