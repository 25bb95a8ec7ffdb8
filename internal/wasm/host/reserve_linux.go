//go:build linux

package host

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/internal/hugepage"
)

// mmapPtr and munmapPtr are the system calls Reserve and Unreserve make,
// named so that a test can watch exactly which ranges they map and give
// back (reading /proc/self/maps after the fact races the Go runtime,
// which may map the freed range again at once).
var (
	mmapPtr   = unix.MmapPtr
	munmapPtr = unix.MunmapPtr
)

// Reserve maps n bytes (rounded up to whole wasm pages) of private
// anonymous memory that reads as zero and that the kernel backs only as
// it is touched (MAP_NORESERVE: no swap is set aside for the untouched
// rest), so a linear memory can grow inside it without a copy. It returns
// nil when it cannot: n is zero or past what a 32-bit wasm memory can be,
// the kernel refuses (strict overcommit), or the platform is not Linux.
// Unreserve gives the mapping back.
//
// The mapping starts on a huge page boundary and asks for transparent
// huge pages (package hugepage): a guest's boot touches its first MiBs
// at once, and faulting them in 2 MiB at a time is what makes a new
// instance cheap on a virtual machine.
func Reserve(n uint64) []byte {
	n = (n + 65535) &^ 65535
	if n == 0 || n > maxMapping {
		return nil
	}
	// Map a huge page more, and keep the n bytes from the first huge
	// page boundary. (unix.MmapPtr, not syscall.Mmap, whose Munmap takes
	// only the whole slice Mmap returned.)
	size := uintptr(n) + hugepage.Size
	p, err := mmapPtr(-1, 0, nil, size, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	whole := unsafe.Slice((*byte)(p), size)
	off := uintptr(hugepage.Alignment(whole))
	if off > 0 {
		_ = munmapPtr(p, off)
	}
	if tail := hugepage.Size - off; tail > 0 {
		_ = munmapPtr(unsafe.Add(p, off+uintptr(n)), tail)
	}
	b := whole[off : off+uintptr(n) : off+uintptr(n)]
	hugepage.Advise(b)
	return b
}

// Unreserve unmaps what Reserve mapped.
func Unreserve(b []byte) {
	if cap(b) > 0 {
		_ = munmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(cap(b)))
	}
}
