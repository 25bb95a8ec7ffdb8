//go:build linux

package host

import "syscall"

// mappedMemory is a LinearMemory in one anonymous mapping of the whole
// limit, mapped without reserving swap: pages are committed only when the
// guest touches them, and they start zeroed.
type mappedMemory struct {
	a       *Allocator
	region  []byte
	started bool
}

func newMappedMemory(a *Allocator, size uint64) linearMemory {
	region := Reserve(size)
	if region == nil {
		return nil // e.g. strict overcommit: fall back to a Go slice
	}
	return &mappedMemory{a: a, region: region}
}

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if !m.a.grant(size, !m.started) {
		return nil
	}
	if size > uint64(len(m.region)) { // the limit rounded up to a page
		m.a.refused.Store(true)
		return nil
	}
	m.started = true
	return m.region[:size:size]
}

// Free is called by wazero when the module closes; Release unmaps.
func (m *mappedMemory) Free() {}

func (m *mappedMemory) release() {
	Unreserve(m.region)
	m.region = nil
}

func (m *mappedMemory) zero(from, to uint64) {
	from, to = clip(from, to, uint64(len(m.region)))
	page := uint64(syscall.Getpagesize())
	if start := (from + zeroInPlace + page - 1) &^ (page - 1); start < to {
		end := to &^ (page - 1)
		if start < end && syscall.Madvise(m.region[start:end], syscall.MADV_DONTNEED) == nil {
			clear(m.region[from:start])
			clear(m.region[end:to])
			return
		}
	}
	clear(m.region[from:to])
}
