package main

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// cacheEntries returns the wazero entries (not seals) under dir.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	var entries []string
	for _, d := range wazeroCacheDirs(dir) {
		names, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, n := range names {
			if isEntry(n.Name()) {
				entries = append(entries, filepath.Join(d, n.Name()))
			}
		}
	}
	return entries
}

// cachedQuickJSApp returns an app whose only engine is quickjs-fresh,
// with its wazero cache in the directory run passes, and a long
// cold-start allowance: compiling QuickJS twice at once under -race on a
// loaded machine can take longer than the default allowance, and this
// test is about the cache, not the compile's speed.
func cachedQuickJSApp() *app {
	opts := func(dir string) *quickjs.Options {
		return &quickjs.Options{Mode: quickjs.ModeFresh, CompilationCacheDir: dir, ColdStartAllowance: 5 * time.Minute}
	}
	return &app{
		newRegistry: func() (*registry.Registry, error) {
			b, err := quickjs.New(opts(""))
			if err != nil {
				return nil, err
			}
			caps := b.Capabilities()
			closeBackend(b)
			r := new(registry.Registry)
			r.Register(registry.Entry{Engine: quickjs.EngineFresh, Language: caps.Language, Capabilities: caps,
				Factory: func() (spi.Backend, error) { return quickjs.New(opts("")) }})
			return r, nil
		},
		cacheFactory: func(engine, dir string) spi.Factory {
			return func() (spi.Backend, error) { return quickjs.New(opts(dir)) }
		},
	}
}

// TestRunCompiledModuleCache runs QuickJS with a cache directory:
// concurrent first runs share it, every entry they leave is sealed, and
// an entry damaged afterwards (its header, or cut short) costs a
// recompile, not a failure.
func TestRunCompiledModuleCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	js := script(t, "one.js", "input + 1")
	runOnce := func() result {
		// A long wall clock: the first runs compile inside the run, which
		// under -race on a loaded machine can outlast the default 5 s plus
		// the effect's grace.
		return cli(cachedQuickJSApp(), "", "run", "--cache-dir", dir, "--timeout", "5m", "--input", "41", js)
	}

	// Two processes' worth of first runs at once, on an empty directory.
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
	entries := cacheEntries(t, dir)
	require.NotEmpty(t, entries, "the run wrote the compiled module to %s", dir)
	for _, e := range entries {
		assert.True(t, sealed(e), "%s is sealed after the run", e)
	}
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
			for _, e := range cacheEntries(t, dir) {
				damage(e)
			}
			res := runOnce()
			require.Equal(t, exitOK, res.code, "a damaged cache entry is recompiled: %s", res.stderr)
			assert.Equal(t, "42\n", res.stdout)
			entries := cacheEntries(t, dir)
			require.NotEmpty(t, entries)
			for _, e := range entries {
				assert.True(t, sealed(e), "%s is sealed again", e)
			}
		})
	}
}

func TestCheckCache(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "wazero-v0.0.0-"+runtime.GOARCH+"-"+runtime.GOOS)
	require.NoError(t, os.Mkdir(sub, 0o700))
	write := func(name, text string) string {
		p := filepath.Join(sub, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	good := write("good", "compiled")
	unsealed := write("unsealed", "compiled")
	wrong := write("wrong", "compiled")
	orphan := write("gone"+sealSuffix, "0000")
	inProgress := write("entry.123.tmp", "half")
	sealCache(dir)
	for _, p := range []string{good, unsealed, wrong} {
		require.True(t, sealed(p), p)
	}
	require.NoError(t, os.Remove(unsealed+sealSuffix))
	require.NoError(t, os.WriteFile(wrong, []byte("damaged!"), 0o600))

	assert.Equal(t, 2, checkCache(dir))
	assert.FileExists(t, good)
	assert.FileExists(t, good+sealSuffix)
	for _, p := range []string{unsealed, wrong, wrong + sealSuffix, orphan} {
		assert.NoFileExists(t, p)
	}
	assert.FileExists(t, inProgress, "another process's write in progress is left alone")
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
	assert.Empty(t, dirs, "--no-cache asks for no cached factory")

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
	t.Setenv("XDG_CACHE_HOME", notDir)
	t.Setenv("HOME", notDir)
	dirs = nil
	res = cli(a, "", "run", js)
	assert.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "1\n", res.stdout)
	assert.Contains(t, res.stderr, "running without the compiled-module cache")
}
