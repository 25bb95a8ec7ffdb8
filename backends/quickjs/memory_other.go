//go:build !linux

package quickjs

// newMappedMemory is Linux-only; elsewhere linear memory is a Go slice.
func newMappedMemory(*limitedAllocator, uint64) linearMemory { return nil }
