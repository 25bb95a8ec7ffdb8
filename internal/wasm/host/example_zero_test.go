package host_test

import (
	"fmt"

	"github.com/sandbank/sandbank/internal/wasm/host"
)

// ExampleAllocator_Zero clears the part of a linear memory above an
// earlier, smaller size, as a host does when it restores a parked
// instance whose memory a run grew.
func ExampleAllocator_Zero() {
	a := host.NewAllocator(4 << 16)
	defer a.Release()
	mem := a.Allocate(1<<16, 4<<16)
	mem.Reallocate(1 << 16) // the initial memory: one page
	buf := mem.Reallocate(3 << 16)
	buf[100], buf[2<<16] = 1, 2 // a byte below the first page's end, one above
	a.Zero(1<<16, 3<<16)
	fmt.Println(buf[100], buf[2<<16])
	// Output: 1 0
}
