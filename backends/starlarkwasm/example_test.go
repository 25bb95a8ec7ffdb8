package starlarkwasm_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/spi"
)

// A script's result, then an allocation bomb stopped by the memory limit:
// the guest's Go runtime runs out of its capped linear memory and the
// host reports the limit, not a script error.
func Example() {
	b, err := starlarkwasm.New(nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	ctx := context.Background()
	limits := spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 32 << 20}

	out, err := b.Evaluate(ctx, spi.Request{
		Script: []byte("def main(input):\n    return {\"sum\": input[\"a\"] + input[\"b\"]}\n"),
		Input:  []byte(`{"a": 2, "b": 3}`),
		Limits: limits,
	})
	fmt.Println(out.Kind, string(out.Value), err)

	out, err = b.Evaluate(ctx, spi.Request{
		Script: []byte("def main(input):\n    return len([0] * 100000000)\n"),
		Input:  []byte(`{}`),
		Limits: limits,
	})
	fmt.Println(out.Kind, out.Limit, err)
	// Output:
	// ok {"sum":5} <nil>
	// limit memory <nil>
}
