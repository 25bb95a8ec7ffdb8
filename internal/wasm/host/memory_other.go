//go:build !linux

package host

func newMappedMemory(*Allocator, uint64) linearMemory { return nil }
