package hugepage_test

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/hugepage"
)

func TestMake(t *testing.T) {
	for _, n := range []int{0, 1, hugepage.Size/2 - 1, hugepage.Size / 2, hugepage.Size, 3*hugepage.Size + 5} {
		b := hugepage.Make(n)
		require.Len(t, b, n)
		require.Equal(t, n, cap(b), "appending must not write past the advised pages")
		require.Equal(t, make([]byte, n), b)
		if n >= hugepage.Size/2 && runtime.GOOS == "linux" {
			require.Zero(t, uintptr(unsafe.Pointer(unsafe.SliceData(b)))%hugepage.Size, "n=%d", n)
		}
	}
}

func TestClone(t *testing.T) {
	src := make([]byte, 3<<20)
	for i := range src {
		src[i] = byte(i * 7)
	}
	c := hugepage.Clone(src)
	require.Equal(t, src, c)
	c[0]++
	require.NotEqual(t, src[0], c[0], "a copy, not the same memory")
}
