package storage

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/atomicfile"
	"github.com/sandbank/sandbank/record"
)

// readChunk is how much DirStore.ReadScript reads between checks of its
// context.
const readChunk = 1 << 20

// DirStore is a content-addressed script store in a directory on disk:
// files are written atomically and verified on read. It is safe for
// concurrent use, including by several processes sharing the directory
// (unless it is the directory's owner: see DirStoreOptions.Quarantine).
//
// A script with address sha256:<hex> lives in <dir>/<hex[:2]>/<hex>. Put
// writes it whole or not at all (package internal/atomicfile: a
// temporary file in that same directory, synced and renamed into place),
// so a reader sees either no file or the whole script. ReadScript hashes
// what it read: a file whose bytes do not match its name (a tampered or
// corrupted store) is an untyped error, never a missing script and never
// accepted.
//
// ReadScript reads only regular files, and never more than the store's
// size bound: a FIFO, a device or a symbolic link at a script's path (say,
// to /dev/zero) is refused without blocking on it, and a file larger than
// the bound is refused before it is read.
type DirStore struct {
	dir      string
	max      int64 // one script's bound
	log      *slog.Logger
	damaged  func()
	bounded  bool // MaxBytes and MaxEntries apply
	maxBytes int64
	maxEnts  int

	mu    sync.Mutex
	known map[record.Address]int64 // stored: size; only when bounded
	bytes int64                    // of known and of the Puts in flight
	wip   int                      // Puts in flight
}

// DirStoreOptions configure a DirStore. The zero value (or a nil
// *DirStoreOptions) means defaults: a directory that other processes may
// share, unbounded but for the size of one script.
type DirStoreOptions struct {
	// MaxScriptBytes bounds a script: Put refuses a larger one, and
	// ReadScript refuses a larger file without reading it. Zero means
	// effect.DefaultMaxScriptBytes, the effect's own default script bound;
	// it must be >= 0.
	MaxScriptBytes int64
	// Quarantine, when not empty, makes the store the directory's owner
	// (the only process using it, as a server is under its data
	// directory's lock): NewDirStore reads every script back and checks
	// it against its address, removes what a Put cut by a crash left
	// behind, and moves a script that does not check (or anything else at
	// a script's path) into Quarantine, reporting it, so it is never
	// served. Empty means the directory may be shared, and NewDirStore
	// reads nothing.
	Quarantine string
	// MaxBytes and MaxEntries bound what an owning store (Quarantine set)
	// holds: what was acknowledged stays, and a Put past either bound is
	// refused with an error matching ErrStoreFull. Zero means no bound;
	// they must be >= 0, and need Quarantine.
	MaxBytes   int64
	MaxEntries int
	// Logger hears of every damaged script found (on open, or by a read
	// since). Nil means none.
	Logger *slog.Logger
	// Damaged, when not nil, is called once for every damaged script
	// found (a server counts them in its metrics).
	Damaged func()
}

// ErrStoreFull is matched by a Put past an owning DirStore's bounds
// (DirStoreOptions.MaxBytes, MaxEntries): the caller's request, not
// retryable (it fails the same way until scripts are removed). It matches
// effect.ErrScriptTooLarge, as a MemoryStore's refusal of a script over
// its bound does, and effect.ErrInvalidCall.
var ErrStoreFull = fmt.Errorf("storage: the store is full: %w: %w", effect.ErrScriptTooLarge, effect.ErrInvalidCall)

// NewDirStore opens (creating if needed, with mode 0700) a store in dir.
// A nil opts means defaults. With opts.Quarantine it checks every script
// in dir first (a cost in proportion to what is stored).
func NewDirStore(dir string, opts *DirStoreOptions) (*DirStore, error) {
	var o DirStoreOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxScriptBytes < 0 || o.MaxBytes < 0 || o.MaxEntries < 0 {
		return nil, fmt.Errorf("storage: dir store: negative bound: %w", effect.ErrInvalidLimits)
	}
	if o.Quarantine == "" && (o.MaxBytes != 0 || o.MaxEntries != 0) {
		return nil, fmt.Errorf("storage: dir store: MaxBytes and MaxEntries need Quarantine: %w", effect.ErrInvalidCall)
	}
	if o.MaxScriptBytes == 0 {
		o.MaxScriptBytes = effect.DefaultMaxScriptBytes
	}
	if err := makeDir("dir store", dir); err != nil {
		return nil, err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: dir store: %w", err)
	}
	if !fi.IsDir() {
		return nil, errors.New("storage: dir store: not a directory")
	}
	s := &DirStore{dir: dir, max: o.MaxScriptBytes, log: o.Logger, damaged: o.Damaged,
		maxBytes: o.MaxBytes, maxEnts: o.MaxEntries}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.damaged == nil {
		s.damaged = func() {}
	}
	if o.Quarantine != "" {
		s.bounded = true
		s.known = map[record.Address]int64{}
		if err := s.check(o.Quarantine); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// check reads every script in the store back and checks it against its
// address, indexing those that check. A leftover of a Put cut by a crash
// (a temporary file, never renamed into place; ".put-" is the name such a
// file had before package atomicfile wrote them) is removed. A script that
// does not match its address, or anything else at a script's path, is
// reported and moved into quarantine, so it is refused (a run naming it
// finds no script) and never served.
func (s *DirStore) check(quarantine string) error {
	subs, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("storage: dir store: %w", err)
	}
	for _, sub := range subs {
		if !sub.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(s.dir, sub.Name()))
		if err != nil {
			return fmt.Errorf("storage: dir store: %w", err)
		}
		for _, e := range ents {
			path := filepath.Join(s.dir, sub.Name(), e.Name())
			if atomicfile.IsTemp(e.Name()) || strings.HasPrefix(e.Name(), ".put-") {
				_ = os.Remove(path)
				continue
			}
			addr, ok := addressOfFile(sub.Name(), e.Name())
			if !ok {
				continue // not a script's path: never read by address
			}
			b, err := s.read(context.Background(), addr)
			if err != nil {
				s.damaged()
				s.log.Warn("sandbank: script store: a stored script does not check against its address; it is moved aside and never served",
					slog.String("script", string(addr)), slog.String("quarantine", quarantine))
				if err := os.MkdirAll(quarantine, 0o700); err != nil {
					return fmt.Errorf("storage: dir store: %w", err)
				}
				if err := os.Rename(path, filepath.Join(quarantine, e.Name())); err != nil {
					return fmt.Errorf("storage: dir store: %w", err)
				}
				continue
			}
			s.known[addr] = int64(len(b))
			s.bytes += int64(len(b))
		}
	}
	return nil
}

// path returns the file of a well-formed address.
func (s *DirStore) path(addr record.Address) string {
	d := digest(addr)
	return filepath.Join(s.dir, d[:2], d)
}

// digest returns the hex digest of a well-formed address.
func digest(addr record.Address) string { return strings.TrimPrefix(string(addr), "sha256:") }

// addressOfFile returns the address a DirStore keeps at <sub>/<name>.
func addressOfFile(sub, name string) (record.Address, bool) {
	if len(name) != 64 || sub != name[:2] {
		return "", false
	}
	if _, err := hex.DecodeString(name); err != nil || strings.ToLower(name) != name {
		return "", false
	}
	addr, err := effect.ParseAddress("sha256:" + name)
	return addr, err == nil
}

// Put stores b, synced to disk before it returns, and returns its
// address. Storing a script that is already there (and intact) does not
// rewrite it; a damaged copy (or anything else at its path that is not a
// directory) is replaced. A script over the store's bound is refused with
// an error matching effect.ErrScriptTooLarge; a script past an owning
// store's bounds, with one matching ErrStoreFull.
func (s *DirStore) Put(b []byte) (record.Address, error) {
	if int64(len(b)) > s.max {
		return "", fmt.Errorf("storage: dir store: script of %d bytes over the store's bound of %d bytes: %w", len(b), s.max, effect.ErrScriptTooLarge)
	}
	if !s.bounded {
		return s.put(b)
	}
	addr := record.AddressOf(b)
	size := int64(len(b))
	s.mu.Lock()
	if _, ok := s.known[addr]; ok {
		s.mu.Unlock()
		return addr, nil
	}
	if s.maxBytes > 0 && s.bytes+size > s.maxBytes || s.maxEnts > 0 && len(s.known)+s.wip >= s.maxEnts {
		s.mu.Unlock()
		return "", ErrStoreFull
	}
	s.bytes += size
	s.wip++
	s.mu.Unlock()

	got, err := s.put(b)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.wip--
	_, dup := s.known[addr]
	if err != nil || dup {
		s.bytes -= size
	}
	if err != nil {
		return "", err
	}
	s.known[addr] = size
	return got, nil
}

// put writes b at its address unless it is there already.
func (s *DirStore) put(b []byte) (record.Address, error) {
	addr := record.AddressOf(b)
	final := s.path(addr)
	if have, err := s.readFile(context.Background(), final); err == nil && bytes.Equal(have, b) {
		return addr, nil
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return "", fmt.Errorf("storage: dir store: %w", err)
	}
	if err := atomicfile.WriteFile(final, 0o600, b); err != nil {
		return "", fmt.Errorf("storage: dir store: %w", err)
	}
	return addr, nil
}

// ReadScript implements effect.ScriptReader. A script that is not there
// is an error matching fs.ErrNotExist; a path that is not a regular file,
// a file over the store's bound and bytes that do not hash to addr are
// untyped errors, and reported as damage (DirStoreOptions.Logger,
// Damaged). ctx is checked before and while reading.
func (s *DirStore) ReadScript(ctx context.Context, addr record.Address) ([]byte, error) {
	b, err := s.read(ctx, addr)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, effect.ErrInvalidCall) && ctx.Err() == nil {
		s.damaged()
		s.log.Warn("sandbank: script store: a stored script does not check against its address; it is not served",
			slog.String("script", string(addr)))
	}
	return b, err
}

// read is ReadScript without the report of damage.
func (s *DirStore) read(ctx context.Context, addr record.Address) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := effect.ParseAddress(string(addr)); err != nil {
		return nil, err
	}
	b, err := s.readFile(ctx, s.path(addr))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("storage: dir store: script %s: %w", addr, fs.ErrNotExist)
		}
		return nil, err
	}
	if record.AddressOf(b) != addr {
		return nil, errors.New("storage: dir store: stored script does not match its address")
	}
	return b, nil
}

var (
	errNotRegular    = errors.New("storage: dir store: stored script is not a regular file")
	errStoreTooLarge = errors.New("storage: dir store: stored script is over the store's size bound")
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
	return readBounded(ctx, path, s.max, "storage: dir store: ", errNotRegular, errStoreTooLarge)
}

// readBounded is DirStore.readFile for any store of files: at most max
// bytes of the regular file at path, else notRegular or tooLarge; other
// errors are prefixed with prefix, except fs.ErrNotExist, returned as it
// is.
func readBounded(ctx context.Context, path string, max int64, prefix string, notRegular, tooLarge error) ([]byte, error) {
	li, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	if !li.Mode().IsRegular() {
		return nil, notRegular
	}
	if li.Size() > max {
		return nil, tooLarge
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular
	}
	if fi.Size() > max {
		return nil, tooLarge
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()))
	// One byte past the bound tells a file that grew after Stat.
	r := io.LimitReader(f, max+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := io.CopyN(&buf, r, readChunk)
		if err == io.EOF || (err == nil && n < readChunk) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s%w", prefix, err)
		}
	}
	if int64(buf.Len()) > max {
		return nil, tooLarge
	}
	return buf.Bytes(), nil
}

// makeDir makes a store's directory, private to this user, if it is
// not there; what names the store in the error.
func makeDir(what, dir string) error {
	if dir == "" {
		return fmt.Errorf("storage: %s: empty directory name", what)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("storage: %s: %w", what, err)
	}
	return nil
}
