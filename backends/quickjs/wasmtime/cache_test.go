//go:build cgo

package wasmtime

import (
	"os"
	"path/filepath"
	"testing"

	wt "github.com/bytecodealliance/wasmtime-go/v39"
	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/wasm/cache"
)

func TestCacheCompilesWritesAndReloads(t *testing.T) {
	rt, err := processRuntime(true)
	require.NoError(t, err)
	wasm, err := wt.Wat2Wasm(`(module (func (export "f") (result i32) (i32.const 42)))`)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "cache")
	require.NoError(t, cache.Prepare(dir))

	mod, fromCache, err := loadModule(rt.engine, rt.config, dir, wasm)
	require.NoError(t, err)
	require.NotNil(t, mod)
	assert.False(t, fromCache, "an empty directory means a compile")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one entry, no temporary file left behind")
	assert.Equal(t, cacheName(rt.config, wasm), entries[0].Name())
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	mod, fromCache, err = loadModule(rt.engine, rt.config, dir, wasm)
	require.NoError(t, err)
	assert.True(t, fromCache, "the second load deserializes")
	store := wt.NewStore(rt.engine)
	defer store.Close()
	require.NoError(t, store.SetFuel(1000))
	store.SetEpochDeadline(1 << 40)
	inst, err := wt.NewInstance(store, mod, nil)
	require.NoError(t, err)
	v, err := inst.GetFunc(store, "f").Call(store)
	require.NoError(t, err)
	assert.Equal(t, int32(42), v)

	// A damaged entry is never run: it is recompiled and rewritten.
	path := filepath.Join(dir, cacheName(rt.config, wasm))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for name, damaged := range map[string][]byte{
		"truncated": b[:len(b)/2],
		"flipped":   append(append([]byte(nil), b[:10]...), append([]byte{b[10] ^ 0xff}, b[11:]...)...),
		"empty":     nil,
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, damaged, 0o600))
			_, ok := readCache(rt.engine, dir, cacheName(rt.config, wasm))
			assert.False(t, ok)
			_, fromCache, err := loadModule(rt.engine, rt.config, dir, wasm)
			require.NoError(t, err)
			assert.False(t, fromCache)
			_, ok = readCache(rt.engine, dir, cacheName(rt.config, wasm))
			assert.True(t, ok, "the entry was rewritten")
		})
	}
}

func TestCacheKeyCoversBindingConfigAndBinary(t *testing.T) {
	wasm := quickjswasi.QuickJSWASM
	a := cacheKey("v39.0.1", engineConfig, wasm)
	assert.Regexp(t, `^quickjs-[0-9a-f]{32}\.cwasm$`, a)
	assert.Equal(t, a, cacheKey("v39.0.1", engineConfig, wasm))
	assert.NotEqual(t, a, cacheKey("v39.0.2", engineConfig, wasm), "the binding's version")
	assert.NotEqual(t, a, cacheKey("v39.0.1", engineConfig+";x", wasm), "the engine configuration")
	assert.NotEqual(t, a, cacheKey("v39.0.1", engineConfig, append([]byte{0}, wasm...)), "the binary")
	assert.Equal(t, cacheKey(bindingVersion(), engineConfig, wasm), cacheName(engineConfig, wasm))
}
