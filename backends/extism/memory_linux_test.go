//go:build linux

package extism

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryGrowsInPlace: on Linux a linear memory is one reservation of
// the most it may reach, so growing it to 256 MiB neither moves it (no
// copy) nor changes what it held, and the grown part reads as zero. On the
// Go heap the grow would have moved it.
func TestMemoryGrowsInPlace(t *testing.T) {
	b := newBudget(512<<20, 65536)
	m := b.Allocate(wasmPageSize, 1<<30).(*linearMemory)
	buf := m.Reallocate(wasmPageSize)
	require.Len(t, buf, wasmPageSize)
	buf[0], buf[wasmPageSize-1] = 7, 9
	grown := m.Reallocate(256 << 20)
	require.Len(t, grown, 256<<20)
	assert.True(t, unsafe.SliceData(buf) == unsafe.SliceData(grown), "the memory moved")
	assert.Equal(t, []byte{7, 9}, []byte{grown[0], grown[wasmPageSize-1]})
	assert.Zero(t, grown[wasmPageSize], "grown memory must read as zero")
	assert.Zero(t, grown[len(grown)-1], "grown memory must read as zero")
	assert.Nil(t, m.Reallocate(600<<20), "a grow past the budget is refused")
	assert.Equal(t, uint64(256<<20), b.inUse())
	m.Free()
	assert.Zero(t, b.inUse())
}
