package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// The compiled-module cache of the command line.
//
// Compiling QuickJS to machine code takes about a second (wazero) to a few
// seconds (wasmtime), once per process; a command line is one process per
// call. So run keeps the compiled module in a directory, by default
// os.UserCacheDir()/sandbank, and each engine reads it from there:
// builtin.CacheFactory configures the engine's own cache option.
//
// Both engines write an entry atomically (a temporary file renamed over
// the entry), so concurrent processes only ever see a whole entry or none.
// A damaged entry must cost a recompile, never a failure or a crash:
//
//   - quickjs-wasmtime stores a SHA-256 with every entry and recompiles
//     when it does not match (backends/quickjs/wasmtime).
//   - wazero (quickjs, quickjs-fresh) checks a CRC of the machine code only;
//     a damaged header fails the compile, and damaged function offsets are
//     not checked at all. So the command line seals every wazero entry
//     with a sidecar file holding its SHA-256 (name + sealSuffix), checks
//     the seal before the engine reads the directory, and removes an entry
//     whose seal is missing or wrong: the engine then compiles and writes
//     it again, and this process seals the new entry after the run.
//
// Removing an entry is always safe (the worst case is one more compile),
// which is what makes the scheme safe against concurrent processes: one
// that removes an entry another just wrote only costs that compile.

// cacheDirName is the command line's directory under os.UserCacheDir.
const cacheDirName = "sandbank"

// sealSuffix names the sidecar holding the SHA-256 of a wazero entry.
const sealSuffix = ".sha256"

// maxCacheEntryBytes bounds what the check reads of one entry: the
// compiled QuickJS module is a few MiB; anything far larger is not ours and
// is removed.
const maxCacheEntryBytes = 256 << 20

// defaultCacheDir returns os.UserCacheDir()/sandbank, or "" when the
// platform has no user cache directory (no $HOME, no $XDG_CACHE_HOME).
func defaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return ""
	}
	return filepath.Join(dir, cacheDirName)
}

// prepareCacheDir creates dir (mode 0700) when missing and checks that
// it is a directory that only its owner, the current user, can write:
// a compiled module read from it is run as machine code.
func prepareCacheDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("cache directory %s is not a directory", dir)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("cache directory %s is writable by others (mode %v); use a directory only you can write", dir, info.Mode().Perm())
	}
	return ownedByMe(dir, info)
}

// wazeroCacheDirs returns wazero's version-specific directories under dir
// ("wazero-VERSION-ARCH-OS") for this platform.
func wazeroCacheDirs(dir string) []string {
	suffix := "-" + runtime.GOARCH + "-" + runtime.GOOS
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "wazero-") && strings.HasSuffix(e.Name(), suffix) {
			dirs = append(dirs, filepath.Join(dir, e.Name()))
		}
	}
	return dirs
}

// isEntry reports whether name is a wazero cache entry (not a seal, not a
// temporary file of a write in progress).
func isEntry(name string) bool {
	return !strings.HasSuffix(name, sealSuffix) && !strings.HasSuffix(name, ".tmp") && !strings.HasPrefix(name, ".")
}

// checkCache removes every wazero entry under dir whose seal is missing
// or does not match, and every seal without its entry. It returns the
// number of entries removed. Errors are not reported: an entry that
// cannot be checked is removed, and one that cannot be removed makes the
// engine fail its compile, which run reports like any infrastructure error.
func checkCache(dir string) (removed int) {
	for _, d := range wazeroCacheDirs(dir) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			path := filepath.Join(d, name)
			if strings.HasSuffix(name, sealSuffix) {
				if _, err := os.Lstat(strings.TrimSuffix(path, sealSuffix)); errors.Is(err, os.ErrNotExist) {
					_ = os.Remove(path)
				}
				continue
			}
			if !isEntry(name) {
				continue
			}
			if !sealed(path) {
				_ = os.Remove(path)
				_ = os.Remove(path + sealSuffix)
				removed++
			}
		}
	}
	return removed
}

// sealed reports whether the entry at path is a regular file whose
// SHA-256 is the one its seal holds.
func sealed(path string) bool {
	want, err := os.ReadFile(path + sealSuffix)
	if err != nil {
		return false
	}
	got, err := fileSum(path)
	return err == nil && bytes.Equal(bytes.TrimSpace(want), []byte(got))
}

// sealCache writes the seal of every wazero entry under dir that has
// none: the entries this process's engine just wrote. A seal is written
// atomically, like the entries.
func sealCache(dir string) {
	for _, d := range wazeroCacheDirs(dir) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !isEntry(e.Name()) {
				continue
			}
			path := filepath.Join(d, e.Name())
			if _, err := os.Stat(path + sealSuffix); err == nil {
				continue
			}
			sum, err := fileSum(path)
			if err != nil {
				continue
			}
			_ = writeAtomic(path+sealSuffix, []byte(sum+"\n"))
		}
	}
}

// fileSum is the hex SHA-256 of a regular file of at most
// maxCacheEntryBytes.
func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() || info.Size() > maxCacheEntryBytes {
		return "", fmt.Errorf("%s is not a cache entry", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxCacheEntryBytes+1)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeAtomic writes b to path through a temporary file in the same
// directory, renamed over path once complete.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".seal-*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}
