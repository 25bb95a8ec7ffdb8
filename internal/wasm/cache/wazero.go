package cache

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/internal/atomicfile"
	"github.com/tetratelabs/wazero"
)

// sealSuffix names the sidecar holding the SHA-256 of a wazero entry.
const sealSuffix = ".sha256"

// wazeroDir is the directory under a cache directory that holds the
// wazero caches, one directory per module.
const wazeroDir = "wazero"

// Wazero is the wazero compilation cache of one module in a cache
// directory, with wazero's entries sealed. wazero checks only a CRC of
// the machine code it reads back: a damaged header fails the compile, and
// damaged function offsets are not checked at all. So OpenWazero removes
// every entry whose seal is missing or wrong before wazero can read it,
// and Seal seals what a compile wrote.
//
// One Wazero per directory and module lives as long as the process, and
// every runtime of the module shares it: wazero keeps the compiled module
// in memory too, so only the process's first compile reads the disk.
type Wazero struct {
	dir     string
	cache   wazero.CompilationCache
	checked chan struct{} // closed once Check of the entries there is done
}

var (
	wazeroMu     sync.Mutex
	wazeroCaches = map[string]*Wazero{}
)

// OpenWazero returns the process's sealed wazero cache of the module
// named module (a Key) in dir, a directory Resolve returned, opening it
// on first use.
//
// Checking the seals of the entries already there reads them whole, so
// it runs in the background, while the caller reads or rewrites the
// module; CompilationCache waits for it. Open the cache as soon as the
// module's key is known.
func OpenWazero(dir, module string) (*Wazero, error) {
	path := filepath.Join(dir, wazeroDir, module)
	wazeroMu.Lock()
	defer wazeroMu.Unlock()
	if w, ok := wazeroCaches[path]; ok {
		return w, nil
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, err
	}
	c, err := wazero.NewCompilationCacheWithDir(path)
	if err != nil {
		return nil, err
	}
	w := &Wazero{dir: path, cache: c, checked: make(chan struct{})}
	go func() {
		defer close(w.checked)
		removeOldLayout(dir)
		Check(path)
	}()
	wazeroCaches[path] = w
	return w, nil
}

// CompilationCache is the cache to configure the module's runtime with,
// once the entries already there are checked (it waits for that): wazero
// then reads only sealed entries. It lives as long as the process: do
// not close it.
func (w *Wazero) CompilationCache() wazero.CompilationCache {
	<-w.checked
	return w.cache
}

// Seal seals the entries a compile wrote: call it once
// Runtime.CompileModule has returned.
func (w *Wazero) Seal() {
	<-w.checked
	Seal(w.dir)
}

// removeOldLayout removes the wazero directories the command line kept
// directly in the cache directory before each module had a directory of
// its own: nothing reads them any more, and removing a cache entry only
// ever costs a compile.
func removeOldLayout(dir string) {
	for _, d := range wazeroDirs(dir) {
		_ = os.RemoveAll(d)
	}
}

// wazeroDirs returns wazero's version-specific directories under dir
// ("wazero-VERSION-ARCH-OS") for this platform.
func wazeroDirs(dir string) []string {
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

// Check removes every wazero entry in the wazero cache directory dir (the
// one given to wazero.NewCompilationCacheWithDir) whose seal is missing
// or does not match, and every seal without its entry. It returns the
// number of entries removed. Errors are not reported: an entry that
// cannot be checked is removed, and one that cannot be removed makes
// wazero fail its compile, which the backend reports like any
// infrastructure error.
func Check(dir string) (removed int) {
	for _, d := range wazeroDirs(dir) {
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
			if !Sealed(path) {
				_ = os.Remove(path)
				_ = os.Remove(path + sealSuffix)
				removed++
			}
		}
	}
	return removed
}

// Sealed reports whether the wazero entry at path is a regular file whose
// SHA-256 is the one its seal holds.
func Sealed(path string) bool {
	want, err := os.ReadFile(path + sealSuffix)
	if err != nil || len(want) > 2*sumSize+1 {
		return false
	}
	got, err := fileSum(path)
	return err == nil && string(bytesTrim(want)) == got
}

// Seal writes the seal of every wazero entry in the wazero cache
// directory dir that has none: the entries a compile just wrote. A seal
// is written atomically, like the entries.
func Seal(dir string) {
	for _, d := range wazeroDirs(dir) {
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
			_ = atomicfile.WriteFile(path+sealSuffix, 0o600, []byte(sum+"\n"))
		}
	}
}

// Entries returns the wazero entries (not seals) in the wazero cache
// directories under dir, a directory Resolve returned, for tests and
// tools.
func Entries(dir string) []string {
	var out []string
	mods, err := os.ReadDir(filepath.Join(dir, wazeroDir))
	if err != nil {
		return nil
	}
	for _, m := range mods {
		for _, d := range wazeroDirs(filepath.Join(dir, wazeroDir, m.Name())) {
			names, err := os.ReadDir(d)
			if err != nil {
				continue
			}
			for _, n := range names {
				if isEntry(n.Name()) {
					out = append(out, filepath.Join(d, n.Name()))
				}
			}
		}
	}
	return out
}

func bytesTrim(b []byte) []byte { return []byte(strings.TrimSpace(string(b))) }
