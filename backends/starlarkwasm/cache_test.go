package starlarkwasm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/wasm/cache"
	"github.com/sandbank/sandbank/spi"
)

// TestCacheDir: a backend keeps the rewritten guest and its compiled code
// in its cache directory, sealed; CacheDir with NoCache is refused.
func TestCacheDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	b, err := New(&Options{CacheDir: dir})
	require.NoError(t, err)
	defer b.Close()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return 1 + 1"), Input: json.RawMessage("null")})
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage(`2`)), out)

	blobs, err := filepath.Glob(filepath.Join(dir, "starlarkwasm-*.wasm"))
	require.NoError(t, err)
	require.Len(t, blobs, 1, "the rewritten guest is kept")
	_, ok := cache.Read(dir, filepath.Base(blobs[0]))
	assert.True(t, ok)
	entries := cache.Entries(dir)
	require.NotEmpty(t, entries, "the compiled guest is kept")
	for _, e := range entries {
		assert.True(t, cache.Sealed(e), "%s is sealed", e)
	}
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	_, err = New(&Options{CacheDir: dir, NoCache: true})
	assert.ErrorContains(t, err, "cannot be used together")
}
