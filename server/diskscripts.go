package server

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/effect"
)

// diskScripts is one tenant's script store on disk: an effect.DirStore
// (files written atomically and synced, checked against their address on
// every read), bounded like the memory store but never evicting: what was
// acknowledged stays, and a store that is full refuses a new script.
type diskScripts struct {
	store      *effect.DirStore
	maxBytes   int64
	maxEntries int
	log        *slog.Logger
	damaged    func()

	mu    sync.Mutex
	known map[effect.Address]int64 // stored: size
	bytes int64                    // of known and of the Puts in flight
	wip   int                      // Puts in flight
}

// errStoreFull is a Put past the tenant's store bounds: the caller's
// request, not retryable (it fails the same way until scripts are
// removed). It matches effect.ErrScriptTooLarge, as the memory store's
// refusal does, and effect.ErrInvalidCall.
var errStoreFull = fmt.Errorf("server: the tenant's store is full: %w: %w", effect.ErrScriptTooLarge, effect.ErrInvalidCall)

// openDiskScripts opens the tenant's store in dir and checks every script
// in it against its address. A leftover of a Put cut by a crash (a
// temporary file, never renamed into place) is removed. A script that
// does not match its address, or anything else at a script's path, is
// reported (log and damaged) and moved into quarantine, so it is refused
// (a run naming it finds no script) and never served.
func openDiskScripts(ctx context.Context, dir, quarantine string, maxBytes int64, maxEntries int, log *slog.Logger, damaged func()) (*diskScripts, error) {
	st, err := effect.NewDirStoreWith(dir, &effect.DirStoreOptions{MaxScriptBytes: maxBytes})
	if err != nil {
		return nil, fmt.Errorf("server: script store: %w", err)
	}
	s := &diskScripts{store: st, maxBytes: maxBytes, maxEntries: maxEntries, log: log, damaged: damaged,
		known: map[effect.Address]int64{}}
	subs, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("server: script store: %w", err)
	}
	for _, sub := range subs {
		if !sub.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(dir, sub.Name()))
		if err != nil {
			return nil, fmt.Errorf("server: script store: %w", err)
		}
		for _, e := range ents {
			path := filepath.Join(dir, sub.Name(), e.Name())
			if strings.HasPrefix(e.Name(), ".put-") {
				_ = os.Remove(path)
				continue
			}
			addr, ok := addressOfFile(sub.Name(), e.Name())
			if !ok {
				continue // not a script's path: never read by address
			}
			b, err := st.ReadScript(ctx, addr)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				damaged()
				log.Warn("sandbank: script store: a stored script does not check against its address; it is moved aside and never served",
					slog.String("script", string(addr)), slog.String("quarantine", quarantine))
				if err := os.MkdirAll(quarantine, 0o700); err != nil {
					return nil, fmt.Errorf("server: script store: %w", err)
				}
				if err := os.Rename(path, filepath.Join(quarantine, e.Name())); err != nil {
					return nil, fmt.Errorf("server: script store: %w", err)
				}
				continue
			}
			s.known[addr] = int64(len(b))
			s.bytes += int64(len(b))
		}
	}
	return s, nil
}

// addressOfFile returns the address a DirStore keeps at <sub>/<name>.
func addressOfFile(sub, name string) (effect.Address, bool) {
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
// address. A script already stored is not written again.
func (s *diskScripts) Put(b []byte) (effect.Address, error) {
	addr := effect.AddressOf(b)
	size := int64(len(b))
	s.mu.Lock()
	if _, ok := s.known[addr]; ok {
		s.mu.Unlock()
		return addr, nil
	}
	if s.bytes+size > s.maxBytes || len(s.known)+s.wip >= s.maxEntries {
		s.mu.Unlock()
		return "", errStoreFull
	}
	s.bytes += size
	s.wip++
	s.mu.Unlock()

	got, err := s.store.Put(b)

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

// ReadScript reads the script at addr; the DirStore checks it against
// addr, and one damaged since the start is reported, and refused.
func (s *diskScripts) ReadScript(ctx context.Context, addr effect.Address) ([]byte, error) {
	b, err := s.store.ReadScript(ctx, addr)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
		s.damaged()
		s.log.Warn("sandbank: script store: a stored script does not check against its address; it is not served",
			slog.String("script", string(addr)))
	}
	return b, err
}
