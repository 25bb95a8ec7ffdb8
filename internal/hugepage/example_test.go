package hugepage_test

import (
	"fmt"

	"github.com/sandbank/sandbank/internal/hugepage"
)

// A parked instance keeps a copy of its memory at the park point.
func ExampleClone() {
	memory := make([]byte, 3<<20) // a guest's memory after its boot
	snapshot := hugepage.Clone(memory)
	fmt.Println(len(snapshot), cap(snapshot))
	// Output: 3145728 3145728
}
