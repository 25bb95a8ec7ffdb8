package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noTemps checks that dir holds no temporary file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, IsTemp(e.Name()), "a temporary file is left: %s", e.Name())
	}
}

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	require.NoError(t, WriteFile(path, 0o600, []byte("one")))
	require.NoError(t, WriteFile(path, 0o600, []byte("tw"), []byte("o")))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(b))
	noTemps(t, dir)
}

func TestCreateFileNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	require.NoError(t, CreateFile(path, 0o600, []byte("first")))
	err := CreateFile(path, 0o600, []byte("second"))
	require.ErrorIs(t, err, fs.ErrExist)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "first", string(b))
	noTemps(t, dir)
}

func TestModeIsExact(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix modes")
	}
	dir := t.TempDir()
	for _, perm := range []fs.FileMode{0o600, 0o644} {
		path := filepath.Join(dir, perm.String())
		require.NoError(t, CreateFile(path, perm, []byte("k")))
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, perm, fi.Mode().Perm())
	}
}

// A write that cannot be put in place leaves what was there, and no
// temporary file.
func TestFailureLeavesTheTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d")
	require.NoError(t, os.Mkdir(path, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(path, "inside"), nil, 0o600))
	require.Error(t, WriteFile(path, 0o600, []byte("x")))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	noTemps(t, dir)
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".f-123.tmp": true, ".signing.key-9.tmp": true,
		"f": false, "f.tmp": false, ".tmp": false, ".hidden": false,
	} {
		assert.Equal(t, want, IsTemp(name), name)
	}
}
