package effect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// readChunk is how much DirStore.ReadScript reads between checks of its
// context.
const readChunk = 1 << 20

// DirStore is a content-addressed script store in a directory on disk:
// files are written atomically and verified on read. It is safe for
// concurrent use, including by several processes sharing the directory.
//
// A script with address sha256:<hex> lives in <dir>/<hex[:2]>/<hex>. Put
// writes a temporary file in that same directory, syncs it and renames it
// into place, so a reader sees either no file or the whole script.
// ReadScript hashes what it read: a file whose bytes do not match its name
// (a tampered or corrupted store) is an untyped error, never a missing
// script and never accepted.
type DirStore struct {
	dir string
}

// NewDirStore opens (creating if needed, with mode 0700) a store in dir.
func NewDirStore(dir string) (*DirStore, error) {
	if dir == "" {
		return nil, errors.New("effect: dir store: empty directory name")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("effect: dir store: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("effect: dir store: %w", err)
	}
	if !fi.IsDir() {
		return nil, errors.New("effect: dir store: not a directory")
	}
	return &DirStore{dir: dir}, nil
}

// path returns the file of a well-formed address.
func (s *DirStore) path(addr Address) string {
	d := addr.digest()
	return filepath.Join(s.dir, d[:2], d)
}

// Put stores b and returns its address. Storing a script that is already
// there (and intact) does not rewrite it; a damaged copy is replaced.
func (s *DirStore) Put(b []byte) (Address, error) {
	sum := sha256.Sum256(b)
	addr := addressOfSum(sum)
	final := s.path(addr)
	if have, err := os.ReadFile(final); err == nil && bytes.Equal(have, b) {
		return addr, nil
	}
	sub := filepath.Dir(final)
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return "", fmt.Errorf("effect: dir store: %w", err)
	}
	tmp, err := os.CreateTemp(sub, ".put-*")
	if err != nil {
		return "", fmt.Errorf("effect: dir store: %w", err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return "", fmt.Errorf("effect: dir store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("effect: dir store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("effect: dir store: %w", err)
	}
	if err := os.Rename(tmpName, final); err != nil {
		return "", fmt.Errorf("effect: dir store: %w", err)
	}
	ok = true
	syncDir(sub)
	return addr, nil
}

// syncDir makes a rename durable where the platform allows it; failure is
// not an error (some file systems refuse to sync a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// ReadScript implements ScriptReader. A script that is not there is an
// error matching fs.ErrNotExist; bytes that do not hash to addr are an
// untyped error. ctx is checked before and while reading.
func (s *DirStore) ReadScript(ctx context.Context, addr Address) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := ParseAddress(string(addr)); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(addr))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("effect: dir store: script %s: %w", addr, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("effect: dir store: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<31 {
		buf.Grow(int(fi.Size()))
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := io.CopyN(&buf, f, readChunk)
		if err == io.EOF || (err == nil && n < readChunk) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("effect: dir store: %w", err)
		}
	}
	b := buf.Bytes()
	if !addr.matches(b) {
		return nil, errors.New("effect: dir store: stored script does not match its address")
	}
	return b, nil
}
