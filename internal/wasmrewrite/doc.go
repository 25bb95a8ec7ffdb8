// Package wasmrewrite rewrites the WebAssembly modules the wazero engines
// run: it decodes a binary module, applies passes, and encodes it again,
// in pure Go, once per process (the caller caches the result).
//
// # The decoder
//
// Decode reads every section a pass may change (types, imports,
// functions, globals, exports, start, elements, code, the name section)
// into the fields of Module, and keeps every other section as it came.
// Encode writes them back; decoding and encoding a module with no pass
// applied gives back the same bytes (a test checks it over every module
// of the repository and the QuickJS binary). The decoder walks every
// instruction of every body, and refuses, with an error wrapping
// ErrUnsupported, any feature it does not understand (SIMD, threads,
// exception handling, tail calls, multiple memories, GC types, an unknown
// opcode or section): a pass never leaves an instruction unseen. No Go
// library for the binary format fits: wazero's decoder is internal,
// tetratelabs/wabin keeps function bodies as opaque bytes and has not
// been released since 2023, and go-interpreter/wagon is archived; the
// passes need an instruction walker anyway, which is most of the code.
//
// # The preemption pass
//
// Preempt makes a module visit its host regularly: every function entry
// and loop header takes one unit off a budget (an added global), bulk
// memory and table operations one unit per KiB, and when the budget is
// spent the guest calls the host function PreemptModule.PreemptName,
// which returns the next budget, or traps to stop the run. So the
// goroutine running the guest returns to Go at least every budget's
// worth of work, and the Go runtime can preempt it (a garbage collection
// is never held up by a guest loop), and a host can stop a run without
// wazero's close-on-context-done, whose check at every loop header leaves
// compiled code for Go each time (64–69% of a CPU-heavy QuickJS run).
// memory.fill and memory.copy are replaced by helper functions that work
// in chunks of BulkChunk bytes, each charged first, so that one huge
// bulk operation cannot hold the goroutine either.
//
// # The stack pass
//
// Stack gives a module built by LLVM for wasm32 a C stack of its own,
// bounded: its initial memory grows by Stack.Size bytes, the stack
// pointer (the global the name section calls __stack_pointer) starts at
// the top of that region, and a check after every global.set of the
// stack pointer calls the host function PreemptModule.StackOverflowName
// (which must trap) before a frame could write below the region's guard.
// It checks every read of the stack pointer against the shapes LLVM
// emits (prologues, saves around alloca, red-zone leaf frames of at most
// StackRedZone bytes) and refuses, with an error wrapping ErrStackShape,
// a module whose stack pointer it cannot identify or uses in any other
// way. It also exports the stack pointer's low-water mark (StackLowName),
// so that a host restoring memory knows how much of the stack a run may
// have written. stack.go says why the region is outside wasi-libc's heap.
//
// # Notes
//
// Version(passes...) names the output: a cache keyed on the
// input module must include it. The rewritten module has the DWARF
// sections removed (their code offsets no longer hold).
package wasmrewrite
