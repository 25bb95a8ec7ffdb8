//go:build linux

package python

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
)

// TestMachineCheckedOncePerProcess: a second New with the same
// interpreter, bubblewrap and packages directory runs neither the probe
// nor the self-test again.
func TestMachineCheckedOncePerProcess(t *testing.T) {
	backendOrSkip(t)
	before := machineRuns.Load()
	for _, o := range []*Options{nil, {CPUTime: time.Second}, {Seed: 7}} {
		b, err := New(o)
		require.NoError(t, err)
		assert.NoError(t, b.Warm(context.Background()))
		_ = b.Close()
	}
	assert.Equal(t, before, machineRuns.Load(), "probes and self-tests run by New after the first")
}

// TestMachineCheckKeptOnDisk: what the check found is kept in the cache
// directory, so that a new process (here: the process's own record of
// the check forgotten) neither probes nor self-tests; a damaged entry, or
// none (NoCache), costs a check, never a failure. Seen failing with the
// entry not read (the second Warm probed again).
func TestMachineCheckKeptOnDisk(t *testing.T) {
	backendOrSkip(t)
	real, err := exec.LookPath("python3")
	require.NoError(t, err)
	// A path of its own: a key no other test has checked.
	py := filepath.Join(t.TempDir(), "python3")
	require.NoError(t, os.Symlink(real, py))
	dir := filepath.Join(t.TempDir(), "cache")
	newProcess := func(o *Options) (*Backend, int64) {
		t.Helper()
		b, err := New(o)
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		machines.Delete(machineKey{b.bwrap, b.python, b.sitePackages, strings.Join(b.packages, " ")})
		before := machineRuns.Load()
		require.NoError(t, b.Warm(context.Background()))
		evalOK(t, b, "6 * 7", "42")
		return b, machineRuns.Load() - before
	}
	b, checks := newProcess(&Options{Python: py, CacheDir: dir})
	assert.Positive(t, checks, "the first process checks the machine")
	entry := b.cacheEntry()
	require.NotEmpty(t, entry)
	require.FileExists(t, filepath.Join(dir, entry))

	_, checks = newProcess(&Options{Python: py, CacheDir: dir})
	assert.Zero(t, checks, "a new process reads the check from the cache")
	_, checks = newProcess(&Options{Python: py, NoZygote: true, CacheDir: dir})
	assert.Positive(t, checks, "the cache holds the zygote's self-test, not a sandbox of a run's own")
	_, checks = newProcess(&Options{Python: py, NoZygote: true, CacheDir: dir})
	assert.Zero(t, checks, "now it holds both")

	require.NoError(t, os.WriteFile(filepath.Join(dir, entry), []byte("damaged"), 0o600))
	_, checks = newProcess(&Options{Python: py, CacheDir: dir})
	assert.Positive(t, checks, "a damaged entry is checked again")
	_, checks = newProcess(&Options{Python: py, CacheDir: dir})
	assert.Zero(t, checks, "and written again")

	_, checks = newProcess(&Options{Python: py, NoCache: true})
	assert.Positive(t, checks, "NoCache: every process checks")
	_, err = New(&Options{CacheDir: dir, NoCache: true})
	assert.Error(t, err)
}

// TestMachineCacheEntryNamesTheFiles: the cache entry's name changes
// with bubblewrap's and the interpreter's files (a new release installed
// at the same path), so that a stale check is never read. Seen failing
// with the files' modification times and sizes left out of the name.
func TestMachineCacheEntryNamesTheFiles(t *testing.T) {
	tmp := t.TempDir()
	bwrap, py := filepath.Join(tmp, "bwrap"), filepath.Join(tmp, "python3")
	require.NoError(t, os.WriteFile(bwrap, []byte("bwrap"), 0o755))
	require.NoError(t, os.WriteFile(py, []byte("python"), 0o755))
	b := &Backend{bwrap: bwrap, python: py, cacheDir: tmp}
	first := b.cacheEntry()
	require.NotEmpty(t, first)
	assert.Equal(t, first, b.cacheEntry())
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(py, later, later))
	second := b.cacheEntry()
	assert.NotEqual(t, first, second, "the interpreter's modification time")
	require.NoError(t, os.WriteFile(bwrap, []byte("bwrap 0.9"), 0o755))
	assert.NotEqual(t, second, b.cacheEntry(), "bubblewrap's size")
	b.cacheDir = ""
	assert.Empty(t, b.cacheEntry(), "no cache directory, no entry")
}

// TestKeptLayoutIsChecked: a layout read from the cache is used only
// while every file it binds is there and every link it makes leads where
// it did; else it is made again (from the probe's report). Seen failing
// with the kept layout taken as it is.
func TestKeptLayoutIsChecked(t *testing.T) {
	tmp := t.TempDir()
	lib, link := filepath.Join(tmp, "libz.so.1.2"), filepath.Join(tmp, "libz.so.1")
	require.NoError(t, os.WriteFile(lib, nil, 0o644))
	require.NoError(t, os.Symlink("libz.so.1.2", link))
	e := &layoutEntry{Python: "/usr/bin/python3", Version: "3.11.2", Args: []string{"--ro-bind", lib, lib, "--symlink", "libz.so.1.2", link}}
	require.NotNil(t, e.layout())
	assert.Equal(t, e.Args, e.layout().args)

	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("libz.so.1.3", link))
	assert.Nil(t, e.layout(), "a link that leads elsewhere")
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("libz.so.1.2", link))
	require.NoError(t, os.Remove(lib))
	assert.Nil(t, e.layout(), "a bound file that has gone")
	assert.Nil(t, (&layoutEntry{Python: "p", Args: []string{"--bind", "/", "/"}}).layout(), "an argument the layout never makes")
}

// TestErrorTextBoundCoversTheEffects: the runner cuts a thrown error's
// message at maxErrorTextBytes of UTF-8, which holds more than the
// effect's MaxTextUnits UTF-16 units whatever the characters (at most
// three bytes of UTF-8 per unit), so the effect still sees a message past
// its bound and marks the cut.
func TestErrorTextBoundCoversTheEffects(t *testing.T) {
	assert.Greater(t, maxErrorTextBytes, 3*effect.MaxTextUnits, "maxErrorTextBytes must hold more than effect.MaxTextUnits units of any text")
}
