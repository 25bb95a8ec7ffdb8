package effect

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
)

// MemoryStore is an in-memory, content-addressed script store, safe for
// concurrent use. Its zero value is an empty store ready to use. It copies
// bytes in Put and out of ReadScript, so neither side can change what the
// other holds.
type MemoryStore struct {
	mu      sync.RWMutex
	scripts map[Address][]byte
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Put stores a copy of b and returns its address. It never fails; the
// error is there to match DirStore.Put.
func (s *MemoryStore) Put(b []byte) (Address, error) {
	addr := AddressOf(b)
	c := append([]byte{}, b...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scripts == nil {
		s.scripts = make(map[Address][]byte)
	}
	s.scripts[addr] = c
	return addr, nil
}

// ReadScript implements ScriptReader. It returns a copy of the stored
// bytes; a script that is not there is an error matching fs.ErrNotExist.
func (s *MemoryStore) ReadScript(ctx context.Context, addr Address) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := ParseAddress(string(addr)); err != nil {
		return nil, err
	}
	s.mu.RLock()
	b, ok := s.scripts[addr]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("effect: memory store: script %s: %w", addr, fs.ErrNotExist)
	}
	return append([]byte{}, b...), nil
}
