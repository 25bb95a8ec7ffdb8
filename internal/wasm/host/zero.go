package host

// Zero sets bytes [from, to) of the linear memory to zero (clipped to
// the memory's current size), for a host that restores a memory to an
// earlier, smaller state it cannot shrink to (a parked instance after a
// run grew its memory). On Linux, whole pages past the first
// zeroInPlace bytes go back to the kernel (madvise MADV_DONTNEED), which
// reads them back as zeros: the cost follows the pages the guest
// touched, not the size, and the host's resident memory drops with them.
func (a *Allocator) Zero(from, to uint64) {
	if a.mem != nil {
		a.mem.zero(from, to)
	}
}

// zeroInPlace is how many bytes of a range Zero clears with stores
// before it gives whole pages back: a page given back costs a fault the
// next time the guest touches it (about as much as clearing 16 KiB), so
// small ranges, which the next run is likely to touch again, stay
// mapped.
const zeroInPlace = 1 << 20

// clip returns [from, to) clipped to a memory of size bytes.
func clip(from, to, size uint64) (uint64, uint64) {
	to = min(to, size)
	return min(from, to), to
}

func (m *sliceMemory) zero(from, to uint64) {
	from, to = clip(from, to, uint64(len(m.buf)))
	clear(m.buf[from:to])
}
