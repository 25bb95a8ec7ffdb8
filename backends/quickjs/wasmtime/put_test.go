//go:build cgo

package wasmtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPutStaysInsideMemory: putU32 and putU64 write little-endian
// inside memory and answer errnoFault, writing nothing, for a place
// whose bytes would pass its end (an address is unsigned).
func TestPutStaysInsideMemory(t *testing.T) {
	mem := make([]byte, 16)
	assert.EqualValues(t, errnoSuccess, putU32(mem, 12, 0x04030201))
	assert.Equal(t, []byte{1, 2, 3, 4}, mem[12:])
	assert.EqualValues(t, errnoSuccess, putU64(mem, 0, 0x0807060504030201))
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, mem[:8])
	before := string(mem)
	assert.EqualValues(t, errnoFault, putU32(mem, 13, 1))
	assert.EqualValues(t, errnoFault, putU64(mem, 9, 1))
	assert.EqualValues(t, errnoFault, putU32(mem, -1, 1))
	assert.EqualValues(t, errnoFault, putU64(mem, -8, 1))
	assert.Equal(t, before, string(mem))
}
