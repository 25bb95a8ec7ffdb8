package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/internal/wasm/cache"
	"github.com/sandbank/sandbank/spi"
)

// TestRunCompiledModuleCache runs QuickJS with a cache directory, each
// run a new process: concurrent first runs share it, every entry they
// leave is sealed, and an entry damaged afterwards (its header, or cut
// short) costs a recompile, not a failure.
func TestRunCompiledModuleCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	js := script(t, "one.js", "input + 1")
	runOnce := func() result {
		// A long wall clock: the first runs compile inside the run, which
		// under -race on a loaded machine can outlast the default 5 s plus
		// the effect's grace.
		return runMainInChild(t, "run", "--engine", quickjs.EngineFresh, "--cache-dir", dir, "--timeout", "5m", "--input", "41", js)
	}
	checkSealed := func(t *testing.T) {
		t.Helper()
		entries := cache.Entries(dir)
		require.NotEmpty(t, entries, "the run wrote the compiled module to %s", dir)
		for _, e := range entries {
			assert.True(t, cache.Sealed(e), "%s is sealed after the run", e)
		}
	}

	// Two processes' first runs at once, on an empty directory.
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runOnce()
		}()
	}
	wg.Wait()
	for _, res := range results {
		require.Equal(t, exitOK, res.code, res.stderr)
		assert.Equal(t, "42\n", res.stdout)
	}
	checkSealed(t)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	damages := map[string]func(path string){
		"header overwritten": func(path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("garbage!"), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		},
		"cut short": func(path string) {
			info, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, info.Size()/2))
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			for _, e := range cache.Entries(dir) {
				damage(e)
			}
			res := runOnce()
			require.Equal(t, exitOK, res.code, "a damaged cache entry is recompiled: %s", res.stderr)
			assert.Equal(t, "42\n", res.stdout)
			checkSealed(t)
		})
	}
}

func TestCacheFlags(t *testing.T) {
	a, _ := fakeApp(t)
	var dirs []string
	a.cacheFactory = func(engine, dir string) spi.Factory {
		dirs = append(dirs, dir)
		return func() (spi.Backend, error) { return fakebackend.New(fakebackend.Capabilities(), directive), nil }
	}
	js := script(t, "x.js", "value 1")

	res := cli(a, "", "run", "--no-cache", "--cache-dir", t.TempDir(), js)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "cannot be used together")

	res = cli(a, "", "run", "--no-cache", js)
	assert.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, []string{""}, dirs, "--no-cache asks for the factory without a cache")
	dirs = nil

	mine := filepath.Join(t.TempDir(), "mine")
	res = cli(a, "", "run", "--cache-dir", mine, js)
	assert.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, []string{mine}, dirs)
	assert.DirExists(t, mine)

	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	res = cli(a, "", "run", "--cache-dir", open, js)
	assert.Equal(t, exitUsage, res.code, "a cache others can write is refused")
	assert.Contains(t, res.stderr, "writable by others")

	// The default directory, when unusable, only costs time.
	notDir := script(t, "file", "")
	t.Setenv(cache.EnvDir, notDir)
	dirs = nil
	res = cli(a, "", "run", js)
	assert.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "1\n", res.stdout)
	assert.Contains(t, res.stderr, "running without the compiled-module cache")
	assert.Equal(t, []string{""}, dirs, "without a usable default, no cache")

	// A usable default is the engines' own: run asks for no other factory.
	t.Setenv(cache.EnvDir, t.TempDir())
	dirs = nil
	res = cli(a, "", "run", js)
	assert.Equal(t, exitOK, res.code, res.stderr)
	assert.Empty(t, dirs)
	assert.NotContains(t, res.stderr, "warning")
}
