package hugepage

// Size is the size of a transparent huge page on the platforms whose
// kernels offer them for anonymous memory (x86-64, and arm64 with 4 KiB
// base pages).
const Size = 2 << 20

// Make returns a zeroed slice of n bytes whose whole huge pages the
// kernel is asked to back with transparent huge pages (MADV_HUGEPAGE,
// honoured when the kernel's THP mode is "madvise" or "always"; elsewhere
// the advice is ignored). Below half a huge page it is an ordinary slice:
// the padding would cost more than the faults it saves. The slice is the
// Go heap's, collected like any other; it holds up to one huge page more
// than n.
func Make(n int) []byte {
	if n < Size/2 {
		return make([]byte, n)
	}
	whole := (n + Size - 1) &^ (Size - 1)
	buf := make([]byte, whole+Size) // room to start on a huge page boundary
	aligned := buf[Alignment(buf):][:whole:whole]
	Advise(aligned)
	return aligned[:n:n]
}

// Clone returns a copy of b in a slice from Make.
func Clone(b []byte) []byte {
	c := Make(len(b))
	copy(c, b)
	return c
}
