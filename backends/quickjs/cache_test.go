package quickjs

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/wasm/cache"
	"github.com/sandbank/sandbank/spi"
)

// cacheChildEnv makes the test binary a child of TestDefaultCacheIsSealed:
// a new process, as a library user's next run is.
const cacheChildEnv = "QUICKJS_CACHE_CHILD"

// TestCacheChild is the child's side of TestDefaultCacheIsSealed: one
// Evaluate on a backend with default options.
func TestCacheChild(t *testing.T) {
	if os.Getenv(cacheChildEnv) == "" {
		t.Skip("run by TestDefaultCacheIsSealed")
	}
	b, err := New(nil)
	require.NoError(t, err)
	defer b.Close()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("1 + 1"), Input: []byte("null"),
		Limits: spi.Limits{WallClock: 10 * time.Minute}})
	require.NoError(t, err)
	require.Equal(t, spi.OK(json.RawMessage(`2`)), out)
}

// TestDefaultCacheIsSealed: a backend with default options keeps the
// rewritten module and its compiled code in the user cache directory,
// every entry sealed, and a new process that finds an entry damaged
// (its header, or cut short) rewrites or recompiles it: it never fails.
func TestDefaultCacheIsSealed(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles QuickJS in child processes")
	}
	dir := filepath.Join(t.TempDir(), "sandbank")
	runChild := func() {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), cacheChildEnv+"=1", cache.EnvDir+"="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}

	blobs := func() []string {
		t.Helper()
		b, err := filepath.Glob(filepath.Join(dir, "quickjs-*.wasm"))
		require.NoError(t, err)
		return b
	}
	checkSealed := func() {
		t.Helper()
		require.NotEmpty(t, blobs(), "the rewritten module is kept")
		for _, b := range blobs() {
			_, ok := cache.Read(dir, filepath.Base(b))
			assert.True(t, ok, "%s is whole", b)
		}
		entries := cache.Entries(dir)
		require.NotEmpty(t, entries, "the compiled module is kept")
		for _, e := range entries {
			assert.True(t, cache.Sealed(e), "%s is sealed", e)
		}
	}

	runChild()
	checkSealed()
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	damages := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"header overwritten", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("garbage!"), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"cut short", func(t *testing.T, path string) {
			info, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, info.Size()/2))
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			for _, p := range append(blobs(), cache.Entries(dir)...) {
				d.damage(t, p)
			}
			runChild()
			checkSealed()
		})
	}
}

// TestCacheDir: a directory set in Options is used and shared by the
// backends of the process; one others can write is refused, and so is
// CacheDir with NoCache.
func TestCacheDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	b := newBackend(t, &Options{CacheDir: dir, ColdStartAllowance: 10 * time.Minute})
	assert.Equal(t, spi.OK(json.RawMessage(`2`)), eval(t, b, "1 + 1", "", spi.Limits{}))
	require.NoError(t, b.Close())
	again := newBackend(t, &Options{CacheDir: dir, ColdStartAllowance: 10 * time.Minute})
	assert.Equal(t, spi.OK(json.RawMessage(`3`)), eval(t, again, "1 + 2", "", spi.Limits{}))
	entries := cache.Entries(dir)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		assert.True(t, cache.Sealed(e), "%s is sealed", e)
	}

	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	_, err := New(&Options{CacheDir: open})
	assert.ErrorContains(t, err, "writable by others")

	_, err = New(&Options{CacheDir: dir, NoCache: true})
	assert.ErrorContains(t, err, "cannot be used together")

	off := newBackend(t, &Options{NoCache: true, ColdStartAllowance: 10 * time.Minute})
	assert.Equal(t, spi.OK(json.RawMessage(`4`)), eval(t, off, "2 + 2", "", spi.Limits{}))
}
