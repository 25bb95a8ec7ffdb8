package quickjs

import (
	"github.com/tetratelabs/wazero/api"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// Parked mode and memory growth.
//
// A wasm memory cannot shrink, so before issue 17 a run that grew its
// instance's memory (every CPU-heavy run: reshape goes from 320 KiB to
// 1.3 MiB) ended the instance, and its replacement cost a boot. The
// rewritten module has its memory size virtualised by
// internal/wasm/rewrite's memory-size pass: memory.size and memory.grow
// see a mutable global that holds the guest-visible size, and the real
// memory grows only past the largest size the guest has had. The global
// is restored with the other mutable globals, so a restored instance sees
// the park point's memory size again; restoreMemory gives it the park
// point's bytes below that size and zeros above it. The guest then sees
// exactly the memory it saw at the park point, and every memory.grow it
// makes is answered as on a fresh instance: from the same size, against
// the same limit (the Allocator caps the real memory at the run's limit,
// and the real memory is never larger than a run of that limit has grown
// it).

// guestPages is the global that holds the module's guest-visible memory
// size in pages, or nil for a module the memory-size pass did not rewrite
// (the module as shipped: NewWazeroClose).
func guestPages(mod api.Module) api.Global {
	if mod == nil {
		return nil
	}
	return mod.ExportedGlobal(wasmrewrite.MemorySizeExport)
}

// guestMemoryBytes is the memory size the guest of mod sees. In parked
// mode it starts every run at the park point's size and grows with the
// run, so at the run's end it is the run's high-water mark (the real size
// is the instance's).
func guestMemoryBytes(mod api.Module, memory api.Memory) int64 {
	if g := guestPages(mod); g != nil {
		return int64(uint32(g.Get())) << 16
	}
	return int64(memory.Size())
}

// memoryParkable reports whether an instance whose run left memory as it
// is may park again: it is still the park point's size, or it grew and
// the module's size is virtualised (restoreMemory undoes the growth).
func (inst *instance) memoryParkable(memory api.Memory) bool {
	size, park := memory.Size(), uint32(len(inst.memory))
	return size == park || (size > park && guestPages(inst.mod) != nil)
}

// restoreMemory puts linear memory back at the park point: the park
// point's bytes below its size, and zeros above it, all the way to the
// real size, so that nothing a run wrote reaches a later run, even
// through an access past the guest-visible size but inside the real
// memory (which traps on a fresh instance and reads zeros here). It
// reports false when the memory cannot be restored: smaller than the
// park point, or grown without a virtualised size.
func (inst *instance) restoreMemory(memory api.Memory) bool {
	if !inst.memoryParkable(memory) {
		return false
	}
	park := uint32(len(inst.memory))
	buf, ok := memory.Read(0, park)
	if !ok {
		return false
	}
	inst.Mem.Zero(uint64(park), uint64(memory.Size()))
	inst.restoreParkBytes(buf) // stack.go
	return true
}
