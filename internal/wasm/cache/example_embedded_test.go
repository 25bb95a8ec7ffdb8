package cache_test

import (
	"fmt"

	"github.com/sandbank/sandbank/internal/wasm/cache"
)

// shippedModule stands for the bytes a module embeds (a go:embed file).
var shippedModule = []byte("\x00asm\x01\x00\x00\x00")

// A backend keys its cache entries by what its guest module is: the
// module's name when the build can give it, else the bytes' hash. A test
// binary records no dependencies, so here the bytes are hashed.
func ExampleEmbeddedInput() {
	guest := shippedModule // tests may put other bytes in its place
	input := cache.EmbeddedInput(guest, shippedModule, "example.com/guest")
	key := cache.Key("guest", input, "pass-list-v1")
	fmt.Println(len(key) > len("guest-"))
	// Output: true
}
