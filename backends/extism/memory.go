package extism

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
)

// budget is the memory allocator of one plugin instance. wazero asks it for
// every linear memory the instance creates (the plugin's own and the Extism
// kernel's, which holds the input, the output and the error text), so it
// sees every byte of wasm memory the run holds. It enforces one budget over
// all of them together and records whether a grow was refused: the exact
// signal behind the Limit memory outcome.
//
// The first allocation of each memory (its declared minimum) is always
// granted, because wazero cannot refuse it gracefully; whether the minimums
// alone overflow the budget is reported by overflowed.
type budget struct {
	mu        sync.Mutex
	limit     uint64
	capBytes  uint64 // wazero's cap on each memory (the SDK's MaxPages)
	memories  []*linearMemory
	used      uint64
	refused   bool // a grow was refused since the last clearRefused
	overStart bool // the declared minimums alone exceed the limit
}

var _ experimental.MemoryAllocator = (*budget)(nil)

func newBudget(limit uint64, pages uint32) *budget {
	return &budget{limit: limit, capBytes: uint64(pages) * wasmPageSize}
}

// Allocate implements experimental.MemoryAllocator.
func (b *budget) Allocate(_, maxBytes uint64) experimental.LinearMemory {
	m := &linearMemory{b: b, max: maxBytes}
	b.mu.Lock()
	b.memories = append(b.memories, m)
	b.mu.Unlock()
	return m
}

// atCap reports whether some memory cannot grow one more page under
// wazero's per-memory cap. wazero refuses such a grow itself, without
// asking the allocator, so wasRefused cannot see it.
func (b *budget) atCap() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.memories {
		if uint64(len(m.buf))+wasmPageSize > b.capBytes {
			return true
		}
	}
	return false
}

// wasRefused reports whether a grow was refused since the last
// clearRefused.
func (b *budget) wasRefused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refused
}

// clearRefused forgets earlier refusals (those while seeding the input).
func (b *budget) clearRefused() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refused = false
}

// overflowed reports whether the memories' declared minimums alone exceed
// the budget.
func (b *budget) overflowed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.overStart
}

// inUse returns the bytes of wasm memory the instance holds.
func (b *budget) inUse() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// linearMemory backs one wasm memory, charging every grow to its budget.
// Where the platform can (reserve), the memory is one mapping of the most
// it may reach (its cap or the budget, whichever is less) that the kernel
// backs with zeroed pages as they are touched, so a grow is a longer
// slice: no copy, no zeroing, nothing on the Go heap. Elsewhere it is a
// Go byte slice that a grow past its capacity reallocates and copies: a
// single memory.grow of hundreds of MiB then spends its time zeroing and
// copying (measured: 93% of the CPU of runaway_native at 1 GiB), and no
// stop check can interrupt one instruction.
type linearMemory struct {
	b         *budget
	buf       []byte
	max       uint64
	started   bool
	mapped    []byte // the reservation buf lies in, or nil
	heapBound bool   // the reservation failed: grow on the Go heap
}

// Reallocate implements experimental.LinearMemory. Returning nil makes the
// wasm memory.grow (or the kernel's alloc) fail gracefully with -1.
func (m *linearMemory) Reallocate(size uint64) []byte {
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	have := uint64(len(m.buf))
	if size < have {
		// wasm memories never shrink; keep wazero's view consistent anyway.
		m.b.used -= have - size
		m.buf = m.buf[:size]
		return m.buf
	}
	grow := size - have
	if m.b.used+grow > m.b.limit {
		if m.started {
			m.b.refused = true
			return nil
		}
		m.b.overStart = true
	}
	m.started = true
	m.b.used += grow
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	if m.mapped == nil && !m.heapBound {
		if r := wasmhost.Reserve(min(m.max, m.b.limit)); uint64(len(r)) >= size {
			copy(r, m.buf)
			m.mapped, m.buf = r, r[:size]
			return m.buf
		} else if r != nil {
			wasmhost.Unreserve(r)
		}
		m.heapBound = true
	}
	// Grow the backing slice geometrically, but never past the memory's
	// maximum or the budget, so a refused grow never over-allocates.
	newCap := 2 * uint64(cap(m.buf))
	newCap = min(newCap, m.max, m.b.limit)
	newCap = max(newCap, size)
	buf := make([]byte, size, newCap)
	copy(buf, m.buf)
	m.buf = buf
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *linearMemory) Free() {
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	m.b.used -= uint64(len(m.buf))
	m.buf = nil
	if m.mapped != nil {
		// wazero touches the memory no more once it freed it. Unmapping
		// touched pages takes time (measured: 5 ms for 1 GiB), so it
		// happens off the path of the run that is ending.
		go wasmhost.Unreserve(m.mapped)
		m.mapped = nil
	}
}
