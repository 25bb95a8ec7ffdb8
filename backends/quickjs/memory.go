package quickjs

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// limitedAllocator backs one run's linear memory and refuses to grow it
// past the run's limit: memory.grow then returns -1, malloc returns NULL
// and QuickJS throws its out-of-memory error. wazero's own page limit is
// per runtime, and there is one runtime per backend, so the per-request
// limit is enforced here.
//
// On Linux the memory is one anonymous mapping of the whole limit,
// reserved but not committed: growing it costs nothing (no copy, no
// zeroing on the host while the guest waits), and only the pages the
// guest touches use host memory. Elsewhere, or when the mapping fails, it
// is a Go slice that grows by copying.
type limitedAllocator struct {
	limit   uint64
	refused atomic.Bool
	mem     linearMemory
}

// linearMemory is a LinearMemory the run releases itself (after reading
// the stack canary), whatever wazero's Free did.
type linearMemory interface {
	experimental.LinearMemory
	release()
}

func (a *limitedAllocator) Allocate(capacity, _ uint64) experimental.LinearMemory {
	// The mapping covers the initial memory even under a smaller limit:
	// the module cannot be instantiated without it.
	if m := newMappedMemory(a, max(a.limit, capacity)); m != nil {
		a.mem = m
		return m
	}
	a.mem = &sliceMemory{a: a, buf: make([]byte, 0, min(capacity, a.limit))}
	return a.mem
}

// release frees the memory; the run calls it once it no longer reads it.
func (a *limitedAllocator) release() {
	if a.mem != nil {
		a.mem.release()
		a.mem = nil
	}
}

// grant reports whether linear memory may reach size bytes. The module's
// initial memory is always granted (wazero requires it); growth past the
// limit is refused and recorded.
func (a *limitedAllocator) grant(size uint64, initial bool) bool {
	if !initial && size > a.limit {
		a.refused.Store(true)
		return false
	}
	return true
}

// sliceMemory is the portable LinearMemory: a Go slice.
type sliceMemory struct {
	a       *limitedAllocator
	buf     []byte
	started bool
}

// smallMemory is the size up to which a sliceMemory grows by doubling;
// past it, the buffer jumps to the limit, so that a growing heap is copied
// once rather than at every doubling.
const smallMemory = 4 << 20

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if !m.a.grant(size, !m.started) {
		return nil
	}
	m.started = true
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	next := 2 * size
	if next > smallMemory {
		next = m.a.limit
	}
	next = min(max(next, size), max(m.a.limit, size))
	grown := make([]byte, size, next)
	copy(grown, m.buf)
	m.buf = grown
	return grown
}

// Free is called by wazero when the module closes; the run still reads
// the canary afterwards, so the buffer is released by release.
func (m *sliceMemory) Free() {}

func (m *sliceMemory) release() { m.buf = nil }
