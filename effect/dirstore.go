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
//
// ReadScript reads only regular files, and never more than the store's
// size bound: a FIFO, a device or a symbolic link at a script's path (say,
// to /dev/zero) is refused without blocking on it, and a file larger than
// the bound is refused before it is read.
type DirStore struct {
	dir string
	max int64
}

// DirStoreOptions configure a DirStore. The zero value (or a nil
// *DirStoreOptions) means defaults.
type DirStoreOptions struct {
	// MaxScriptBytes bounds a script: Put refuses a larger one, and
	// ReadScript refuses a larger file without reading it. Zero means
	// DefaultMaxScriptBytes, the effect's own default script bound; it
	// must be >= 0.
	MaxScriptBytes int64
}

// NewDirStore opens (creating if needed, with mode 0700) a store in dir,
// with default options.
func NewDirStore(dir string) (*DirStore, error) { return NewDirStoreWith(dir, nil) }

// NewDirStoreWith opens (creating if needed, with mode 0700) a store in
// dir. A nil opts means defaults.
func NewDirStoreWith(dir string, opts *DirStoreOptions) (*DirStore, error) {
	var o DirStoreOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxScriptBytes < 0 {
		return nil, invalid(ErrInvalidLimits, "effect: dir store: negative MaxScriptBytes")
	}
	if o.MaxScriptBytes == 0 {
		o.MaxScriptBytes = DefaultMaxScriptBytes
	}
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
	return &DirStore{dir: dir, max: o.MaxScriptBytes}, nil
}

// path returns the file of a well-formed address.
func (s *DirStore) path(addr Address) string {
	d := addr.digest()
	return filepath.Join(s.dir, d[:2], d)
}

// Put stores b and returns its address. Storing a script that is already
// there (and intact) does not rewrite it; a damaged copy (or anything else
// at its path that is not a directory) is replaced. A script over the
// store's bound is refused with an error matching ErrScriptTooLarge.
func (s *DirStore) Put(b []byte) (Address, error) {
	if int64(len(b)) > s.max {
		return "", fmt.Errorf("effect: dir store: script of %d bytes over the store's bound of %d bytes: %w", len(b), s.max, ErrScriptTooLarge)
	}
	sum := sha256.Sum256(b)
	addr := addressOfSum(sum)
	final := s.path(addr)
	if have, err := s.readFile(context.Background(), final); err == nil && bytes.Equal(have, b) {
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
// error matching fs.ErrNotExist; a path that is not a regular file, a file
// over the store's bound and bytes that do not hash to addr are untyped
// errors. ctx is checked before and while reading.
func (s *DirStore) ReadScript(ctx context.Context, addr Address) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := ParseAddress(string(addr)); err != nil {
		return nil, err
	}
	b, err := s.readFile(ctx, s.path(addr))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("effect: dir store: script %s: %w", addr, fs.ErrNotExist)
		}
		return nil, err
	}
	if !addr.matches(b) {
		return nil, errors.New("effect: dir store: stored script does not match its address")
	}
	return b, nil
}

var (
	errNotRegular    = errors.New("effect: dir store: stored script is not a regular file")
	errStoreTooLarge = errors.New("effect: dir store: stored script is over the store's size bound")
)

// readFile reads the regular file at path, refusing anything else without
// blocking on it, and reading at most the store's bound. The path is
// checked with Lstat (a symbolic link is refused, not followed), opened
// non-blocking (a FIFO swapped in meanwhile does not block the open), and
// the open file is checked again with Stat (still regular, still within
// the bound) before a byte is read. The file may have been replaced
// between the two checks (a concurrent Put renames over it): what was
// opened is what is checked, read and, by ReadScript, hashed.
func (s *DirStore) readFile(ctx context.Context, path string) ([]byte, error) {
	li, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("effect: dir store: %w", err)
	}
	if !li.Mode().IsRegular() {
		return nil, errNotRegular
	}
	if li.Size() > s.max {
		return nil, errStoreTooLarge
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("effect: dir store: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("effect: dir store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	if fi.Size() > s.max {
		return nil, errStoreTooLarge
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()))
	// One byte past the bound tells a file that grew after Stat.
	r := io.LimitReader(f, s.max+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := io.CopyN(&buf, r, readChunk)
		if err == io.EOF || (err == nil && n < readChunk) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("effect: dir store: %w", err)
		}
	}
	if int64(buf.Len()) > s.max {
		return nil, errStoreTooLarge
	}
	return buf.Bytes(), nil
}
