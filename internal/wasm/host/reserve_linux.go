//go:build linux

package host

import "syscall"

// Reserve maps n bytes (rounded up to whole wasm pages) of private
// anonymous memory that reads as zero and that the kernel backs only as
// it is touched (MAP_NORESERVE: no swap is set aside for the untouched
// rest), so a linear memory can grow inside it without a copy. It returns
// nil when it cannot: n is zero or past what a 32-bit wasm memory can be,
// the kernel refuses (strict overcommit), or the platform is not Linux.
// Unreserve gives the mapping back.
func Reserve(n uint64) []byte {
	n = (n + 65535) &^ 65535
	if n == 0 || n > maxMapping {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return b
}

// Unreserve unmaps what Reserve mapped.
func Unreserve(b []byte) {
	if b != nil {
		_ = syscall.Munmap(b)
	}
}
