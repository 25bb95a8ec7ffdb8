//go:build linux

package hugepage

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Alignment is how many bytes into buf its first huge page boundary is.
func Alignment(buf []byte) int {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return int((p+Size-1)&^(Size-1) - p)
}

// Advise asks the kernel to back b's whole huge pages with transparent
// huge pages when they are first touched. b must be one allocation of
// its own (a Make or a mapping): the advice covers the pages b spans. A
// kernel without THP leaves ordinary pages.
func Advise(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
