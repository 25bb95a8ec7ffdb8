package rewrite_test

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// growWasm is (module (memory 1) (func (export "grow") (param i32)
// (result i32) (memory.grow (local.get 0)))).
var growWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
	0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f, // type (i32) -> i32
	0x03, 0x02, 0x01, 0x00, // one function
	0x05, 0x03, 0x01, 0x00, 0x01, // memory 1
	0x07, 0x08, 0x01, 0x04, 'g', 'r', 'o', 'w', 0x00, 0x00, // export "grow"
	0x0a, 0x08, 0x01, 0x06, 0x00, 0x20, 0x00, 0x40, 0x00, 0x0b, // local.get 0 memory.grow end
}

// ExampleMemorySize grows a rewritten module's memory, sets the size the
// guest sees back to one page, as a host restoring a snapshot does, and
// grows again: the guest sees the grows of a one-page memory, while the
// real memory, which cannot shrink, grows only past the four pages it
// has.
func ExampleMemorySize() {
	wasm, err := rewrite.RewriteWith(growWasm, rewrite.MemorySizePass)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		panic(err)
	}
	grow := mod.ExportedFunction("grow")
	pages := mod.ExportedGlobal(rewrite.MemorySizeExport).(api.MutableGlobal)
	out, _ := grow.Call(ctx, 3)
	fmt.Println("grow 3:", out[0], "real pages:", mod.Memory().Size()>>16)
	pages.Set(1)
	out, _ = grow.Call(ctx, 2)
	fmt.Println("grow 2:", out[0], "real pages:", mod.Memory().Size()>>16, "guest pages:", pages.Get())
	out, _ = grow.Call(ctx, 2)
	fmt.Println("grow 2:", out[0], "real pages:", mod.Memory().Size()>>16, "guest pages:", pages.Get())
	// Output:
	// grow 3: 1 real pages: 4
	// grow 2: 1 real pages: 4 guest pages: 3
	// grow 2: 3 real pages: 5 guest pages: 5
}
