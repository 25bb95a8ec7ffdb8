package jsfront_test

import (
	"fmt"

	"github.com/sandbank/sandbank/internal/jsfront"
)

func ExamplePrepare() {
	classic, wrapped := jsfront.Prepare([]byte("[1, 2].length"))
	fmt.Printf("%v %s\n", wrapped, classic)

	async, wrapped := jsfront.Prepare([]byte("const x = await Promise.resolve(41)\nx + 1"))
	fmt.Printf("%v %s\n", wrapped, async)
	// Output:
	// false [1, 2].length
	// true (async () => {const x = await Promise.resolve(41)
	// __sandbank_completion__ = x + 1
	// ;return __sandbank_completion__; var __sandbank_completion__})()
}
