package starlarkwasm

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// limitedAllocator backs one run's linear memory and refuses to grow it
// past the run's limit: memory.grow then returns -1 and the Go runtime in
// the guest ends with "fatal error: out of memory". wazero's own page
// limit is per runtime, and there is one runtime per backend, so the
// per-request limit is enforced here. The memory is a Go slice that grows
// by doubling (a copy per doubling, so the host holds at most about twice
// the limit while it grows).
type limitedAllocator struct {
	limit   uint64
	refused atomic.Bool
}

func (a *limitedAllocator) Allocate(capacity, _ uint64) experimental.LinearMemory {
	return &sliceMemory{a: a, buf: make([]byte, 0, capacity)}
}

// sliceMemory is one run's linear memory.
type sliceMemory struct {
	a       *limitedAllocator
	buf     []byte
	started bool
}

// Reallocate grows the memory to size bytes, or refuses (nil) past the
// limit. The module's initial memory is always granted (wazero requires
// it); the run reports a limit below it as the memory limit.
func (m *sliceMemory) Reallocate(size uint64) []byte {
	if m.started && size > m.a.limit {
		m.a.refused.Store(true)
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

// Free drops the memory when the module closes.
func (m *sliceMemory) Free() { m.buf = nil }
