//go:build !linux

package hugepage

// Alignment is 0 where the kernel has no transparent huge pages.
func Alignment([]byte) int { return 0 }

// Advise does nothing where the kernel has no transparent huge pages.
func Advise([]byte) {}
