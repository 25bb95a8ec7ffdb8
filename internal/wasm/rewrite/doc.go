// Package rewrite rewrites the WebAssembly modules the wazero engines
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
// # The passes of parked instances
//
// A host that parks an instance and restores it to one point again and
// again (the QuickJS backend's parked mode) needs, beside linear memory,
// the module's other state, through wazero's public API only. Three
// passes give it that:
//
//   - ParkRead wraps the fd_read import in a function that calls it again
//     with the same arguments while it answers ParkRetry, so that the host
//     can restore a snapshot taken inside fd_read with ParkRetry and take
//     the next run's snapshot in the repeated call: every snapshot is
//     restored once.
//   - ExportGlobals exports every mutable global (GlobalExportName(k)); it
//     runs after every pass that adds a global, so the host can save and
//     restore them all as api.MutableGlobal.
//   - StaticTables rewrites nothing: it proves that no table can change
//     after instantiation (no table.set, table.grow, table.fill,
//     table.copy, table.init or elem.drop in any body, no imported or
//     exported table) or refuses the module with ErrTableWritten, so the
//     host has no table to save or compare.
//
// # The memory-size pass
//
// MemorySize makes the memory size the guest sees a value the host can
// restore: an added mutable global (exported as MemorySizeExport) holds
// it in pages, memory.size reads it, and memory.grow calls an added
// function that raises it and grows the real memory only past the size
// it has already. A wasm memory cannot shrink; with the pass, a host that
// restores a snapshot taken before a run grew the memory (the park point
// of backends/quickjs) sets the global back, zeroes the memory above the
// snapshot's size, and the guest sees the memory of the snapshot again.
// The real size is the largest the guest-visible one has been. Loads and
// stores are still bounds-checked against the real size (see the pass's
// file for what that means for an out-of-bounds access).
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
package rewrite
