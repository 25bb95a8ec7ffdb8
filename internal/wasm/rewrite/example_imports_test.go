package rewrite_test

import (
	"fmt"

	"github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// importWasm is (module (import "wasi_snapshot_preview1" "proc_exit"
// (func (param i32)))).
var importWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
	0x01, 0x05, 0x01, 0x60, 0x01, 0x7f, 0x00, // type (i32) -> ()
	0x02, 0x24, 0x01, // one import
	0x16, 'w', 'a', 's', 'i', '_', 's', 'n', 'a', 'p', 's', 'h', 'o', 't', '_', 'p', 'r', 'e', 'v', 'i', 'e', 'w', '1',
	0x09, 'p', 'r', 'o', 'c', '_', 'e', 'x', 'i', 't', 0x00, 0x00, // a function of type 0
}

// A host reads what a module imports, to set up its imports while the
// module compiles.
func ExampleImports() {
	imports, types, err := rewrite.Imports(importWasm)
	if err != nil {
		panic(err)
	}
	for _, im := range imports {
		fmt.Printf("%s.%s %x -> %x\n", im.Module, im.Name, types[im.Type].Params, types[im.Type].Results)
	}
	// Output: wasi_snapshot_preview1.proc_exit 7f ->
}
