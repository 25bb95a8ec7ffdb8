package host

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// maxMapping is the largest linear memory a 32-bit wasm module can have
// (4 GiB), and so the largest mapping an Allocator makes.
const maxMapping = 1 << 32

// Allocator backs one run's linear memory and refuses to grow it past
// the run's limit: memory.grow then returns -1 in the guest. wazero's own
// page limit is per runtime; an Allocator, passed to one instantiation
// with experimental.WithMemoryAllocator, is per run. Build one with
// [NewAllocator] per run and call [Allocator.Release] once the module is
// closed.
//
// On Linux the memory is one anonymous mapping of the whole limit,
// reserved but not committed: growing it costs nothing (no copy, no
// zeroing on the host while the guest waits), only the pages the guest
// touches use host memory, and Release returns them at once. Elsewhere,
// or when the mapping fails, it is a Go slice that grows by doubling (so
// the host briefly holds the old and the new buffer).
type Allocator struct {
	limit   uint64
	refused atomic.Bool
	mem     linearMemory
}

// NewAllocator returns an allocator for one run whose linear memory may
// grow to limit bytes. The module's initial memory is granted even when
// it is larger.
func NewAllocator(limit uint64) *Allocator { return &Allocator{limit: limit} }

// linearMemory is a LinearMemory the run releases itself, whatever
// wazero's Free did.
type linearMemory interface {
	experimental.LinearMemory
	release()
	zero(from, to uint64)
}

// Allocate implements experimental.MemoryAllocator.
func (a *Allocator) Allocate(capacity, _ uint64) experimental.LinearMemory {
	if m := newMappedMemory(a, max(a.limit, capacity)); m != nil {
		a.mem = m
		return m
	}
	a.mem = &sliceMemory{a: a, buf: make([]byte, 0, min(capacity, a.limit))}
	return a.mem
}

// Refused reports whether a growth past the limit was refused.
func (a *Allocator) Refused() bool { return a.refused.Load() }

// ClearRefused forgets a refusal, for a memory that serves another run (a
// parked instance restored to its park point).
func (a *Allocator) ClearRefused() { a.refused.Store(false) }

// Release frees the memory; call it once the module is closed.
func (a *Allocator) Release() {
	if a.mem != nil {
		a.mem.release()
		a.mem = nil
	}
}

// grant reports whether linear memory may reach size bytes: the initial
// memory always (wazero requires it), growth up to the limit.
func (a *Allocator) grant(size uint64, initial bool) bool {
	if !initial && size > a.limit {
		a.refused.Store(true)
		return false
	}
	return true
}

// sliceMemory is the portable LinearMemory: a Go slice.
type sliceMemory struct {
	a       *Allocator
	buf     []byte
	started bool
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if !m.a.grant(size, !m.started) {
		return nil
	}
	m.started = true
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	next := min(max(2*uint64(cap(m.buf)), size), max(m.a.limit, size))
	grown := make([]byte, size, next)
	copy(grown, m.buf)
	m.buf = grown
	return grown
}

// Free is called by wazero when the module closes; Release frees.
func (m *sliceMemory) Free() {}

func (m *sliceMemory) release() { m.buf = nil }
