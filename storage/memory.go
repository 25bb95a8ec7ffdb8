package storage

import (
	"container/list"
	"context"
	"fmt"
	"io/fs"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

// DefaultMemoryStoreBytes is the default bound on the bytes a MemoryStore
// holds, 256 MiB.
const DefaultMemoryStoreBytes int64 = 256 << 20

// DefaultMemoryStoreEntries is the default bound on the scripts a
// MemoryStore holds.
const DefaultMemoryStoreEntries = 4096

// MemoryStoreOptions configure a MemoryStore. The zero value (or a nil
// *MemoryStoreOptions) means defaults.
type MemoryStoreOptions struct {
	// MaxBytes bounds the total size of the stored scripts. Zero means
	// DefaultMemoryStoreBytes; it must be >= 0.
	MaxBytes int64
	// MaxEntries bounds how many scripts are stored. Zero means
	// DefaultMemoryStoreEntries; it must be >= 0.
	MaxEntries int
}

// MemoryStore is an in-memory, content-addressed script store, safe for
// concurrent use. It copies bytes in Put and out of ReadScript, so neither
// side can change what the other holds.
//
// It is bounded, in bytes and in entries: when a Put would pass either
// bound, the least recently used scripts (by Put or ReadScript) are
// evicted until it fits. A script evicted (or deleted) is missing: a call
// naming it fails with the typed failure scriptMissing. Every method holds the store's lock
// only for map and list updates and copies: none blocks on anything else.
//
// Its zero value is an empty store with the default bounds, ready to use.
type MemoryStore struct {
	mu         sync.Mutex
	maxBytes   int64 // zero: the default
	maxEntries int   // zero: the default
	bytes      int64
	scripts    map[record.Address]*list.Element // of *memoryEntry
	lru        list.List                        // front: most recently used
}

type memoryEntry struct {
	addr record.Address
	b    []byte
}

// NewMemoryStore returns an empty MemoryStore bounded by opts. A nil opts
// means defaults (as does the zero MemoryStore); a negative bound is
// refused with an error matching effect.ErrInvalidLimits.
func NewMemoryStore(opts *MemoryStoreOptions) (*MemoryStore, error) {
	var o MemoryStoreOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes < 0 || o.MaxEntries < 0 {
		return nil, fmt.Errorf("storage: memory store: negative bound: %w", effect.ErrInvalidLimits)
	}
	return &MemoryStore{maxBytes: o.MaxBytes, maxEntries: o.MaxEntries}, nil
}

func (s *MemoryStore) limits() (int64, int) {
	maxBytes, maxEntries := s.maxBytes, s.maxEntries
	if maxBytes == 0 {
		maxBytes = DefaultMemoryStoreBytes
	}
	if maxEntries == 0 {
		maxEntries = DefaultMemoryStoreEntries
	}
	return maxBytes, maxEntries
}

// Put stores a copy of b and returns its address, evicting the least
// recently used scripts when the store would pass a bound. A script larger
// than the byte bound on its own is refused with an error matching
// ErrScriptTooLarge, and nothing is evicted.
func (s *MemoryStore) Put(b []byte) (record.Address, error) {
	addr := record.AddressOf(b)
	maxBytes, maxEntries := s.limits()
	if int64(len(b)) > maxBytes {
		return "", fmt.Errorf("storage: memory store: script of %d bytes over the store's bound of %d bytes: %w", len(b), maxBytes, effect.ErrScriptTooLarge)
	}
	c := append([]byte{}, b...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scripts == nil {
		s.scripts = make(map[record.Address]*list.Element)
	}
	if el, ok := s.scripts[addr]; ok {
		s.lru.MoveToFront(el) // same address, same bytes
		return addr, nil
	}
	for s.lru.Len() > 0 && (s.bytes+int64(len(c)) > maxBytes || s.lru.Len() >= maxEntries) {
		s.removeLocked(s.lru.Back())
	}
	s.scripts[addr] = s.lru.PushFront(&memoryEntry{addr: addr, b: c})
	s.bytes += int64(len(c))
	return addr, nil
}

// Delete removes the script at addr, if it is there. It reports whether it
// was.
func (s *MemoryStore) Delete(addr record.Address) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.scripts[addr]
	if ok {
		s.removeLocked(el)
	}
	return ok
}

func (s *MemoryStore) removeLocked(el *list.Element) {
	e := s.lru.Remove(el).(*memoryEntry)
	delete(s.scripts, e.addr)
	s.bytes -= int64(len(e.b))
}

// Usage returns how many scripts the store holds, and their total size.
func (s *MemoryStore) Usage() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len(), s.bytes
}

// ReadsInstantly marks the store as an effect.InstantReader: ReadScript
// neither blocks nor panics, so an effect calls it on the run's goroutine.
func (s *MemoryStore) ReadsInstantly() {}

// ReadScript implements effect.ScriptReader. It returns a copy of the stored
// bytes and marks the script as recently used; a script that is not there
// is an error matching fs.ErrNotExist.
func (s *MemoryStore) ReadScript(ctx context.Context, addr record.Address) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := effect.ParseAddress(string(addr)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	el, ok := s.scripts[addr]
	var b []byte
	if ok {
		s.lru.MoveToFront(el)
		b = el.Value.(*memoryEntry).b
	}
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("storage: memory store: script %s: %w", addr, fs.ErrNotExist)
	}
	// The stored slice is never modified, so it can be copied unlocked.
	return append([]byte{}, b...), nil
}
