package cache

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
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
	Seal(dir)
	for _, p := range []string{good, unsealed, wrong} {
		require.True(t, Sealed(p), p)
	}
	require.NoError(t, os.Remove(unsealed+sealSuffix))
	require.NoError(t, os.WriteFile(wrong, []byte("damaged!"), 0o600))

	assert.Equal(t, 2, Check(dir))
	assert.FileExists(t, good)
	assert.FileExists(t, good+sealSuffix)
	for _, p := range []string{unsealed, wrong, wrong + sealSuffix, orphan} {
		assert.NoFileExists(t, p)
	}
	assert.FileExists(t, inProgress, "another process's write in progress is left alone")
}

// TestReadDamaged: a blob is returned only whole; a damaged one is
// removed, and Memo then builds and writes it again.
func TestReadDamaged(t *testing.T) {
	dir := t.TempDir()
	body := []byte("the rewritten module")
	require.NoError(t, Write(dir, "m.wasm", body))
	got, ok := Read(dir, "m.wasm")
	require.True(t, ok)
	assert.Equal(t, body, got)

	path := filepath.Join(dir, "m.wasm")
	damages := map[string]func(){
		"flipped":   func() { b, _ := os.ReadFile(path); b[0] ^= 1; _ = os.WriteFile(path, b, 0o600) },
		"cut short": func() { _ = os.Truncate(path, 10) },
		"empty":     func() { _ = os.Truncate(path, 0) },
		"directory": func() { _ = os.Remove(path); _ = os.Mkdir(path, 0o700) },
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(path))
			require.NoError(t, Write(dir, "m.wasm", body))
			damage()
			_, ok := Read(dir, "m.wasm")
			assert.False(t, ok)
			builds := 0
			got, err := Memo(dir, "m.wasm", func() ([]byte, error) { builds++; return body, nil })
			require.NoError(t, err)
			assert.Equal(t, body, got)
			assert.Equal(t, 1, builds)
			got, ok = Read(dir, "m.wasm")
			assert.True(t, ok, "written again")
			assert.Equal(t, body, got)
		})
	}

	failed := errors.New("refused")
	_, err := Memo(dir, "other.wasm", func() ([]byte, error) { return nil, failed })
	assert.ErrorIs(t, err, failed)
	assert.NoFileExists(t, filepath.Join(dir, "other.wasm"))
}

func TestKey(t *testing.T) {
	a := Key("quickjs", []byte("wasm"), "stack+preempt")
	assert.Equal(t, a, Key("quickjs", []byte("wasm"), "stack+preempt"))
	assert.NotEqual(t, a, Key("quickjs", []byte("wasm!"), "stack+preempt"), "the input's bytes")
	assert.NotEqual(t, a, Key("quickjs", []byte("wasm"), "stack"), "the pass list")
	assert.NotEqual(t, Key("q", nil, "ab", "c"), Key("q", nil, "a", "bc"), "the parts' boundaries")
}

// TestResolve: an explicit directory must be usable; an unusable default
// means no cache, not a failure.
func TestResolve(t *testing.T) {
	t.Setenv(EnvDir, "")
	if runtime.GOOS == "linux" {
		home := t.TempDir()
		t.Setenv("XDG_CACHE_HOME", home)
		assert.Equal(t, filepath.Join(home, DirName), DefaultDir())
	}
	def := filepath.Join(t.TempDir(), "default")
	t.Setenv(EnvDir, def)
	require.Equal(t, def, DefaultDir())

	dir, err := Resolve("", false)
	require.NoError(t, err)
	assert.Equal(t, def, dir)
	info, err := os.Stat(def)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	dir, err = Resolve("", true)
	require.NoError(t, err)
	assert.Empty(t, dir)

	_, err = Resolve(t.TempDir(), true)
	assert.ErrorIs(t, err, ErrExclusive)

	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	_, err = Resolve(open, false)
	assert.ErrorContains(t, err, "writable by others")

	require.NoError(t, os.Chmod(def, 0o777))
	dir, err = Resolve("", false)
	require.NoError(t, err, "an unusable default only costs time")
	assert.Empty(t, dir)

	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	_, err = Resolve(notDir, false)
	assert.Error(t, err)
}

// TestOpenWazero: opening a module's cache checks its seals (in the
// background: CompilationCache waits for the check), and removes
// the command line's former layout (wazero's directories directly in the
// cache directory).
func TestOpenWazero(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "wazero-v0.0.0-"+runtime.GOARCH+"-"+runtime.GOOS)
	require.NoError(t, os.Mkdir(old, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(old, "entry"), []byte("compiled"), 0o600))

	sub := filepath.Join(dir, wazeroDir, "m", "wazero-v0.0.0-"+runtime.GOARCH+"-"+runtime.GOOS)
	require.NoError(t, os.MkdirAll(sub, 0o700))
	unsealed := filepath.Join(sub, "entry")
	require.NoError(t, os.WriteFile(unsealed, []byte("compiled"), 0o600))

	w, err := OpenWazero(dir, "m")
	require.NoError(t, err)
	require.NotNil(t, w.CompilationCache())
	assert.NoDirExists(t, old)
	assert.NoFileExists(t, unsealed)
	again, err := OpenWazero(dir, "m")
	require.NoError(t, err)
	assert.Same(t, w, again, "one per process")
}
