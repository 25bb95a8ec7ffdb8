package rewrite_test

import (
	"context"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// loopWasm is (module (func (export "run") (loop (br 0)))): a loop that
// never ends.
var loopWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type () -> ()
	0x03, 0x02, 0x01, 0x00, // one function
	0x07, 0x07, 0x01, 0x03, 'r', 'u', 'n', 0x00, 0x00, // export "run"
	0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop br 0 end end
}

// Example rewrites a module whose loop never ends, and stops it from the
// host function the pass calls, after its thousandth visit.
func Example() {
	wasm, err := rewrite.Rewrite(loopWasm)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	visits := 0
	i32 := []api.ValueType{api.ValueTypeI32}
	_, err = rt.NewHostModuleBuilder(rewrite.PreemptModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
			visits++
			if visits == 1000 {
				panic("stop")
			}
			stack[0] = 1024 // the next budget, in units
		}), i32, i32).
		Export(rewrite.PreemptName).Instantiate(ctx)
	if err != nil {
		panic(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		panic(err)
	}
	_, err = mod.ExportedFunction("run").Call(ctx)
	fmt.Println(visits, err != nil)
	// Output: 1000 true
}

// ExampleExportGlobals exports the budget global the preemption pass
// adds, and reads and writes it through wazero's public API.
func ExampleExportGlobals() {
	wasm, err := rewrite.RewriteWith(loopWasm, rewrite.PreemptPass, rewrite.ExportGlobalsPass)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	i32 := []api.ValueType{api.ValueTypeI32}
	_, err = rt.NewHostModuleBuilder(rewrite.PreemptModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), i32, i32).
		Export(rewrite.PreemptName).Instantiate(ctx)
	if err != nil {
		panic(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		panic(err)
	}
	budget := mod.ExportedGlobal(rewrite.GlobalExportName(0)).(api.MutableGlobal)
	budget.Set(7)
	fmt.Println(rewrite.GlobalExportName(0), budget.Get(), mod.ExportedGlobal(rewrite.GlobalExportName(1)) == nil)
	// Output: sandbank.global.0 7 true
}

// ExampleParkRead wraps a module's fd_read: a host that answers
// ParkRetry is called again with the same arguments.
func ExampleParkRead() {
	wasm, err := os.ReadFile("testdata/park.wasm")
	if err != nil {
		panic(err)
	}
	if wasm, err = rewrite.RewriteWith(wasm, rewrite.ParkReadPass); err != nil {
		panic(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	i32 := api.ValueTypeI32
	reads := 0
	_, err = rt.NewHostModuleBuilder(rewrite.ParkReadModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
			reads++
			stack[0] = 0 // success
			if reads == 1 {
				stack[0] = uint64(rewrite.ParkRetry)
			}
		}), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export(rewrite.ParkReadName).Instantiate(ctx)
	if err != nil {
		panic(err)
	}
	_, err = rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), nil, nil).Export("done").Instantiate(ctx)
	if err != nil {
		panic(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		panic(err)
	}
	r, err := mod.ExportedFunction("read").Call(ctx, 0)
	fmt.Println(reads, r[0], err)
	// Output: 2 0 <nil>
}

// ExampleStaticTables proves that a module never writes a table.
func ExampleStaticTables() {
	m, err := rewrite.Decode(loopWasm)
	if err != nil {
		panic(err)
	}
	fmt.Println(rewrite.StaticTables(m))
	// Output: <nil>
}

// spWasm is a module shaped like LLVM's output: a stack pointer global
// named __stack_pointer (name section) in a one-page memory, and
// (func (export "deep") (param i32)), which moves the stack pointer down
// by its argument and back.
var spWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
	0x01, 0x05, 0x01, 0x60, 0x01, 0x7f, 0x00, // type (i32) -> ()
	0x03, 0x02, 0x01, 0x00, // one function
	0x05, 0x03, 0x01, 0x00, 0x01, // memory 1
	0x06, 0x08, 0x01, 0x7f, 0x01, 0x41, 0x80, 0x80, 0x04, 0x0b, // global (mut i32) (i32.const 65536)
	0x07, 0x08, 0x01, 0x04, 'd', 'e', 'e', 'p', 0x00, 0x00, // export "deep"
	0x0a, 0x16, 0x01, 0x14, 0x01, 0x01, 0x7f, // code: one body, one i32 local
	0x23, 0x00, 0x20, 0x00, 0x6b, 0x22, 0x01, 0x24, 0x00, // sp - n, tee, set
	0x20, 0x01, 0x20, 0x00, 0x6a, 0x24, 0x00, 0x0b, // sp + n, set
	0x00, 0x19, 0x04, 'n', 'a', 'm', 'e', // custom section "name"
	0x07, 0x12, 0x01, 0x00, 0x0f, '_', '_', 's', 't', 'a', 'c', 'k', '_', 'p', 'o', 'i', 'n', 't', 'e', 'r', // global names
}

// ExampleStack gives a module a 64 KiB stack of its own; a frame larger
// than the stack calls the host function the pass imports.
func ExampleStack() {
	s := rewrite.Stack{Size: 64 << 10}
	wasm, err := rewrite.RewriteWith(spWasm, s.Pass())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	_, err = rt.NewHostModuleBuilder(rewrite.PreemptModule).NewFunctionBuilder().
		WithFunc(func() { panic("stack overflow") }).
		Export(rewrite.StackOverflowName).Instantiate(ctx)
	if err != nil {
		panic(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		panic(err)
	}
	deep := mod.ExportedFunction("deep")
	_, err = deep.Call(ctx, 1000)
	fmt.Println("1000 bytes:", err == nil)
	_, err = deep.Call(ctx, 100000)
	fmt.Println("100000 bytes:", err == nil)
	fmt.Println("memory:", mod.Memory().Size())
	// Output:
	// 1000 bytes: true
	// 100000 bytes: false
	// memory: 131072
}
