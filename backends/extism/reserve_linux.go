//go:build linux

package extism

import "syscall"

// reserve maps n bytes (rounded up to whole pages) of private anonymous
// memory that reads as zero and that the kernel backs only as it is
// touched (MAP_NORESERVE: no swap is set aside for the untouched rest),
// or returns nil when it cannot.
func reserve(n uint64) []byte {
	page := uint64(syscall.Getpagesize())
	n = (n + page - 1) &^ (page - 1)
	if n == 0 || n > 1<<40 {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return b
}

// unreserve unmaps what reserve mapped.
func unreserve(b []byte) { _ = syscall.Munmap(b) }
