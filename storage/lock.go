package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrDataDirInUse is matched by the error New returns when another
// process (or another Server of this one, another Data) holds the data directory: two
// servers on one directory would write the receipt logs at their own
// offsets and destroy each other's records. It is infrastructure: the
// directory is free again once its holder ends.
var ErrDataDirInUse = errors.New("storage: the data directory is in use")

// lockFileName is the data directory's lock file: locked (flock on Unix,
// LockFileEx on Windows) by the server using the directory, and holding
// its process id, so that a refused server says which process holds it.
// The lock, not the file, is what counts: the kernel drops it when its
// process ends, however it ends, so a lock file left by a crash stops no
// one.
const lockFileName = "lock"

// lockDataDir takes the data directory dir for this process and returns
// the open lock file, whose Close releases it. An error matches
// ErrDataDirInUse when another holds it.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("storage: data directory: %w", err)
	}
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("storage: data directory: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("storage: data directory: locking %s: %w", path, err)
	}
	if held {
		holder := "another process"
		if pid, ok := lockHolder(f); ok {
			holder = "process " + strconv.Itoa(pid)
		}
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s holds %s (its lock file %s); one server per data directory", ErrDataDirInUse, holder, dir, path)
	}
	// Ours: say whose it is. The process id is information for the next
	// server refused, never what decides: a failure to write it is no
	// failure to lock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// lockHolder reads the process id the holder of the lock file f wrote.
func lockHolder(f *os.File) (int, bool) {
	b := make([]byte, 24) // a process id is at most 20 digits
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return pid, err == nil && pid > 0
}
