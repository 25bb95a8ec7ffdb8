//go:build linux

package host

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/hugepage"
)

// span is a range of addresses, [lo, hi).
type span struct{ lo, hi uintptr }

// mappingLog records the ranges Reserve and Unreserve map and give back,
// through the system calls they make, while a test runs.
type mappingLog struct {
	mapped   []span
	unmapped []span
	failed   []error
}

// watchMappings routes mmapPtr and munmapPtr through a log until the test
// ends. The tests that use it are not parallel, so nothing else maps
// through Reserve meanwhile.
func watchMappings(t *testing.T) *mappingLog {
	log := &mappingLog{}
	realMmap, realMunmap := mmapPtr, munmapPtr
	t.Cleanup(func() { mmapPtr, munmapPtr = realMmap, realMunmap })
	mmapPtr = func(fd int, offset int64, addr unsafe.Pointer, length uintptr, prot, flags int) (unsafe.Pointer, error) {
		p, err := realMmap(fd, offset, addr, length, prot, flags)
		if err == nil {
			log.mapped = append(log.mapped, span{uintptr(p), uintptr(p) + length})
		}
		return p, err
	}
	munmapPtr = func(addr unsafe.Pointer, length uintptr) error {
		err := realMunmap(addr, length)
		if err != nil {
			log.failed = append(log.failed, err)
		} else {
			log.unmapped = append(log.unmapped, span{uintptr(addr), uintptr(addr) + length})
		}
		return err
	}
	return log
}

// covers reports whether spans, which must not overlap, cover want
// exactly: every byte of it once, and nothing outside it.
func covers(spans []span, want span) bool {
	s := append([]span(nil), spans...)
	sort.Slice(s, func(i, j int) bool { return s[i].lo < s[j].lo })
	at := want.lo
	for _, x := range s {
		if x.lo != at || x.hi <= x.lo {
			return false
		}
		at = x.hi
	}
	return at == want.hi
}

// mapped reports whether address p lies in a mapping of this process. It
// is asked only of ranges the test holds mapped: after an unmap, the
// runtime may map the same addresses again at any moment.
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
// all of it: the aligned region, and the slack mapped to align it. What is
// given back is read from the munmap calls themselves, which the kernel
// answered without error, and must cover the one mapping Reserve made
// exactly: an Unreserve that frees nothing (syscall.Munmap refuses a slice
// it did not return, before any system call) leaves the region uncovered.
func TestReserveIsAlignedAndUnreservedWhole(t *testing.T) {
	for _, n := range []uint64{64 << 10, 3 << 20, 1 << 30} {
		log := watchMappings(t)
		region := Reserve(n)
		require.Len(t, region, int(n))
		start := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
		require.Zero(t, start%hugepage.Size, "n=%d", n)
		region[0], region[n-1] = 1, 1 // the whole region is writable
		require.True(t, mapped(t, start))
		require.True(t, mapped(t, start+uintptr(n)-1))
		require.Len(t, log.mapped, 1, "n=%d: Reserve maps once", n)
		whole := log.mapped[0]
		kept := span{start, start + uintptr(n)}
		require.True(t, whole.lo <= kept.lo && kept.hi <= whole.hi, "n=%d: the region lies in the mapping", n)
		require.True(t, covers(append(append([]span(nil), log.unmapped...), kept), whole),
			"n=%d: Reserve gives back exactly the slack around the region: mapped %x, region %x, unmapped %x", n, whole, kept, log.unmapped)

		Unreserve(region)
		assert.Empty(t, log.failed, "n=%d: every munmap succeeded", n)
		assert.True(t, covers(log.unmapped, whole),
			"n=%d: the mapping %x is given back whole, once: unmapped %x", n, whole, log.unmapped)
	}
}
