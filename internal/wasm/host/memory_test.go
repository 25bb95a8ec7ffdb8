package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAllocatorCapsGrowth: the initial memory is granted even above the
// limit, growth up to the limit is granted, past it refused and recorded;
// the mapped and the slice memory behave alike.
func TestAllocatorCapsGrowth(t *testing.T) {
	for name, alloc := range map[string]func(a *Allocator) linearMemory{
		"platform": func(a *Allocator) linearMemory { return a.Allocate(1<<16, 1<<32).(linearMemory) },
		"slice":    func(a *Allocator) linearMemory { m := &sliceMemory{a: a}; a.mem = m; return m },
	} {
		t.Run(name, func(t *testing.T) {
			a := NewAllocator(4 << 16)
			m := alloc(a)
			require.Len(t, m.Reallocate(1<<16), 1<<16, "the initial memory")
			b := m.Reallocate(3 << 16)
			require.Len(t, b, 3<<16)
			b[len(b)-1] = 7
			b = m.Reallocate(4 << 16)
			require.Len(t, b, 4<<16, "growth up to the limit")
			assert.Equal(t, byte(7), b[3<<16-1], "growth keeps the contents")
			assert.False(t, a.Refused())
			assert.Nil(t, m.Reallocate(5<<16), "growth past the limit")
			assert.True(t, a.Refused())
			a.Release()
			a.Release()
		})
	}
}

// TestAllocatorGrantsInitialAboveLimit: a module whose initial memory is
// above the limit still instantiates; its first growth is refused.
func TestAllocatorGrantsInitialAboveLimit(t *testing.T) {
	a := NewAllocator(1 << 16)
	m := a.Allocate(2<<16, 1<<32)
	defer a.Release()
	require.Len(t, m.Reallocate(2<<16), 2<<16)
	assert.Nil(t, m.Reallocate(3<<16))
	assert.True(t, a.Refused())
}
