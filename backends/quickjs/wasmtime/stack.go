//go:build cgo

package wasmtime

import (
	"sync"

	wt "github.com/bytecodealliance/wasmtime-go/v39"
	quickjswasi "github.com/paralin/go-quickjs-wasi"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// The C stack. The module this backend compiles is QuickJS rewritten by
// the same stack pass as package quickjs's (internal/wasm/rewrite): a C
// stack of stackBytes of its own, after the module's initial memory, and
// a bound check after every move of the stack pointer, which calls
// stackOverflow below before a frame would cross the stack's bottom. The
// run then ends in the thrown RangeError "Maximum call stack size
// exceeded" (jsguest.Interpret, from Facts.StackExhausted). wasmtime's own
// native stack (maxWasmStack, 2 MiB) runs out first on a plain
// JavaScript recursion (measured: 3,112 frames, about 670 bytes of it a
// frame against 290 bytes of C stack): its trap, "call stack exhausted",
// is read the same way. So the deepest recursion is wasmtime's, and a
// larger C stack would buy nothing (a larger native stack is not safe:
// the cgo call runs on a thread stack of 8 MiB); the C stack's bound is what keeps an overflow from writing
// outside it whichever runs out first. The canary stays at the stack's
// bottom as a second line of defence.

// stackBytes is the C stack this backend gives the guest: package
// quickjs's default.
const stackBytes = 1 << 20

// guarded is the rewritten module and its stack layout, made once per
// process.
var guarded = sync.OnceValue(func() guardedModule {
	layout, err := jsguest.GuardedLayout(quickjswasi.QuickJSWASM, stackBytes)
	if err != nil {
		return guardedModule{err: err}
	}
	wasm, err := wasmrewrite.RewriteWith(quickjswasi.QuickJSWASM, jsguest.StackPass(stackBytes).Pass())
	return guardedModule{wasm: wasm, layout: layout, err: err}
})

type guardedModule struct {
	wasm   []byte
	layout jsguest.Layout
	err    error
}

// stackOverflow is the guest's call when its stack pointer would leave
// its stack: it records the overflow on the run and traps.
func stackOverflow(c *wt.Caller) *wt.Trap {
	if r := runOf(c); r != nil {
		r.stackOverflow.Store(true)
	}
	return wt.NewTrap("wasmtime: the C stack is exhausted")
}
