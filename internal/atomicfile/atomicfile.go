// Package atomicfile writes a file whole or not at all, the one way the
// module does (the renameio pattern): the bytes go to a temporary file in
// the target's directory, which is synced, then renamed over the target
// (WriteFile) or linked at it when nothing is there (CreateFile); the
// directory is synced last, so the new name survives a crash of the
// machine where the file system allows it.
//
// A reader of the target sees either what was there before or the whole
// new file, never a part of it. A crash can leave a temporary file behind:
// its name satisfies IsTemp, and whoever owns the directory may remove it.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempSuffix ends the name of every temporary file (see IsTemp).
const tempSuffix = ".tmp"

// IsTemp reports whether name (a base name) is one of a temporary file
// WriteFile or CreateFile writes: a dot, the target's name, a dash, a
// random number and ".tmp".
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, tempSuffix) && strings.Contains(name, "-")
}

// WriteFile writes the parts, in order, to path with mode perm, replacing
// what is there. When it fails, path is unchanged and no temporary file is
// left.
func WriteFile(path string, perm fs.FileMode, parts ...[]byte) error {
	return write(path, perm, true, parts)
}

// CreateFile writes the parts, in order, to path with mode perm when
// nothing is there; when something is (a file another process created
// meanwhile, say), it fails with an error matching fs.ErrExist and leaves
// it as it is. When it fails, no temporary file is left.
func CreateFile(path string, perm fs.FileMode, parts ...[]byte) error {
	return write(path, perm, false, parts)
}

// write writes the parts to a temporary file beside path and puts it in
// place: renamed over path when isRename, else linked at it.
func write(path string, perm fs.FileMode, isRename bool, parts [][]byte) (err error) {
	place := os.Link
	if isRename {
		place = os.Rename
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+strings.TrimPrefix(filepath.Base(path), ".")+"-*"+tempSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if cerr := f.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
			err = cerr
		}
		// After a Rename the name is gone (and may be another's by now);
		// after a Link or a failure it is to be removed.
		if !renamed {
			if rerr := os.Remove(tmp); err == nil && rerr != nil {
				err = rerr
			}
		}
	}()
	for _, p := range parts {
		if _, err := f.Write(p); err != nil {
			return err
		}
	}
	// CreateTemp made the file 0600; the mode asked for is set exactly,
	// whatever the umask.
	if perm != 0o600 {
		if err := f.Chmod(perm); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := place(tmp, path); err != nil {
		return err
	}
	renamed = isRename
	SyncDir(dir)
	return nil
}

// SyncDir makes the entries just made in dir (a rename, a link, a new
// file) durable where the platform allows it. A failure is not an error:
// some file systems refuse to sync a directory, and the entry is there
// either way.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
