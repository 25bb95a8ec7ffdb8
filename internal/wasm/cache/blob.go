package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/sandbank/sandbank/internal/atomicfile"
	"github.com/sandbank/sandbank/internal/hugepage"
)

// MaxEntryBytes bounds what the cache reads of one entry: a compiled
// guest module is a few to a few tens of MiB; anything far larger is not
// the cache's, and is treated as damaged.
const MaxEntryBytes = 256 << 20

// sumSize is the size of the SHA-256 a blob carries after its body.
const sumSize = sha256.Size

// Key names a cache entry made from input by a process named by the
// parts (a pass list's version, an engine configuration): a hex digest of
// the input's SHA-256 and the parts, prefixed by prefix, which says what
// the entry holds ("quickjs-parked", ...).
//
// The key also names the build of this module (moduleBuild): a pass's
// name must change whenever it writes a different module, and naming the
// build keeps a pass changed without a new name from reading what an
// older release wrote.
func Key(prefix string, input []byte, parts ...string) string {
	h := sha256.New()
	sum := sha256.Sum256(input)
	h.Write(sum[:])
	fmt.Fprintf(h, "\n%s", moduleBuild())
	for _, p := range parts {
		fmt.Fprintf(h, "\n%d:%s", len(p), p)
	}
	return prefix + "-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Read returns the blob name in dir when it is there and whole: a regular
// file of at most MaxEntryBytes whose last 32 bytes are the SHA-256 of
// the rest. A damaged blob is removed, and Read reports it missing.
func Read(dir, name string) ([]byte, bool) {
	path := filepath.Join(dir, name)
	b, err := readBounded(path)
	if err != nil {
		return nil, false
	}
	if len(b) <= sumSize {
		_ = os.Remove(path)
		return nil, false
	}
	body, sum := b[:len(b)-sumSize], b[len(b)-sumSize:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		_ = os.Remove(path)
		return nil, false
	}
	return body, true
}

// Write stores body as the blob name in dir, sealed with its SHA-256,
// atomically.
func Write(dir, name string, body []byte) error {
	sum := sha256.Sum256(body)
	return atomicfile.WriteFile(filepath.Join(dir, name), 0o600, body, sum[:])
}

// Memo returns the blob name in dir, or, when dir is "" or the blob is
// missing or damaged, what build returns, which it then writes to dir
// (best effort: a cache that cannot be written only costs the next
// process a build). An error of build is returned as it is, and nothing is
// written.
func Memo(dir, name string, build func() ([]byte, error)) ([]byte, error) {
	if dir != "" {
		if b, ok := Read(dir, name); ok {
			return b, nil
		}
	}
	b, err := build()
	if err != nil {
		return nil, err
	}
	if dir != "" {
		_ = Write(dir, name, b)
	}
	return b, nil
}

// readBounded reads a regular file of at most MaxEntryBytes. A file that
// is not one is removed.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() > MaxEntryBytes {
		_ = os.Remove(path)
		return nil, fmt.Errorf("cache: %s is not a cache entry", filepath.Base(path))
	}
	// Read one byte more than the size: a file that grew since Stat is not
	// a whole entry. The buffer is kept (a guest module is compiled from
	// it): huge pages fault it in at a fraction of the cost.
	b := hugepage.Make(int(info.Size()) + 1)
	n, err := io.ReadFull(f, b)
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		return b[:n], nil
	case err != nil:
		return nil, err
	}
	return nil, fmt.Errorf("cache: %s changed while it was read", filepath.Base(path))
}

// fileSum is the hex SHA-256 of a regular file of at most MaxEntryBytes.
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
	if !info.Mode().IsRegular() || info.Size() > MaxEntryBytes {
		return "", fmt.Errorf("cache: %s is not a cache entry", filepath.Base(path))
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxEntryBytes+1))
	if err != nil {
		return "", err
	}
	if n > MaxEntryBytes {
		return "", fmt.Errorf("cache: %s is not a cache entry", filepath.Base(path))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// modulePath is this Go module's path.
const modulePath = "github.com/sandbank/sandbank"

// moduleBuild names the build of this module that runs: its version and
// sum when it is a dependency, else (the module's own binaries and tests)
// its version and the version control revision the build records, if
// any.
var moduleBuild = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			if d.Replace != nil {
				d = d.Replace
			}
			return d.Version + " " + d.Sum
		}
	}
	b := bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.modified":
			b += " " + s.Key + "=" + s.Value
		}
	}
	return b
})
