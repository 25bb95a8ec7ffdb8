package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAllocatorZero: Zero clears exactly its range, in place or by giving
// pages back (a range past zeroInPlace with unaligned ends), and leaves
// every byte outside it; the mapped and the slice memory behave alike.
func TestAllocatorZero(t *testing.T) {
	const size = 3 << 20
	for name, alloc := range map[string]func(a *Allocator) linearMemory{
		"platform": func(a *Allocator) linearMemory { return a.Allocate(1<<16, 1<<32).(linearMemory) },
		"slice":    func(a *Allocator) linearMemory { m := &sliceMemory{a: a}; a.mem = m; return m },
	} {
		t.Run(name, func(t *testing.T) {
			for _, r := range [][2]uint64{{100, 5000}, {12345, size - 777}, {1 << 16, size}, {size - 1, size + 99}} {
				a := NewAllocator(size)
				m := alloc(a)
				require.NotNil(t, m.Reallocate(1<<16))
				b := m.Reallocate(size)
				require.Len(t, b, size)
				for i := range b {
					b[i] = byte(i%251) | 1
				}
				a.Zero(r[0], r[1])
				b = m.Reallocate(size) // the same memory, seen again
				bad := 0
				for i := range b {
					in := uint64(i) >= r[0] && uint64(i) < r[1]
					if (in && b[i] != 0) || (!in && b[i] != byte(i%251)|1) {
						bad++
					}
				}
				assert.Zero(t, bad, "Zero(%d, %d): %d bytes wrong", r[0], r[1], bad)
				a.Release()
			}
		})
	}
}
