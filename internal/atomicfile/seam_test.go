package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneAtomicWrite: no code of the module but this package writes a
// file aside and puts it in place, or syncs a file or a directory
// (CreateTemp, Link, Sync): every atomic write calls WriteFile or
// CreateFile, every directory sync SyncDir. (The receipt log syncs its
// segment through (*os.File).Sync as a method value: appending to a log
// is not an atomic write.)
func TestOneAtomicWrite(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module's root")
	self, err := filepath.Abs(".")
	require.NoError(t, err)
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == self || d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, call := range []string{"os.CreateTemp(", "os.Link(", ".Sync()"} {
			if strings.Contains(string(b), call) {
				rel, _ := filepath.Rel(root, path)
				found = append(found, rel+": "+call)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, found, "write atomically with package atomicfile")
}
