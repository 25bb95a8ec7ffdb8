//go:build linux

package host_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/hugepage"
	"github.com/sandbank/sandbank/internal/wasm/host"
)

// mapped reports whether address p lies in a mapping of this process.
func mapped(t *testing.T, p uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(strings.Fields(s.Text())[0], "%x-%x", &lo, &hi); err == nil && lo <= p && p < hi {
			return true
		}
	}
	require.NoError(t, s.Err())
	return false
}

// A reservation starts on a huge page boundary, and Unreserve gives back
// all of it: the aligned region, and the slack mapped to align it.
func TestReserveIsAlignedAndUnreservedWhole(t *testing.T) {
	for _, n := range []uint64{64 << 10, 3 << 20, 1 << 30} {
		region := host.Reserve(n)
		require.Len(t, region, int(n))
		start := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
		require.Zero(t, start%hugepage.Size, "n=%d", n)
		region[0], region[n-1] = 1, 1 // the whole region is writable
		require.True(t, mapped(t, start))
		require.True(t, mapped(t, start+uintptr(n)-1))

		host.Unreserve(region)
		require.False(t, mapped(t, start), "n=%d: the region is still mapped", n)
		require.False(t, mapped(t, start+uintptr(n)-1), "n=%d: the region's end is still mapped", n)
	}
}
