package rewrite

import (
	"errors"
	"fmt"
)

// The memory-size pass.
//
// A wasm memory cannot shrink, so a host that restores a module instance
// to an earlier state (a park point) after a run grew its memory is left
// with a memory larger than the state it restored. The pass makes the
// size the guest sees a value of its own: an added mutable i32 global
// holds the guest-visible size in pages (initially the memory's minimum),
// memory.size reads it, and memory.grow becomes a call of an added
// function that raises it, growing the real memory only past the size
// it has already. A host that restores the global with the other mutable
// globals (and the memory's contents below the restored size, and zeros
// above it) gives the guest back exactly the memory it saw at that state:
// the same memory.size, and the same answer to every memory.grow.
//
// The added function returns -1 exactly when a real memory.grow from the
// guest-visible size would fail: the new size past the memory's maximum
// (or the 65,536 pages of a 32-bit memory), n large enough to overflow,
// or the real grow failing (the runtime's or the embedder's limit); it
// grows nothing then. Otherwise it returns the old guest-visible size
// and raises it by n. The real size is never below the guest-visible one,
// and is the largest guest-visible size there has been.
//
// What the pass does not hide: loads, stores and bulk operations are
// bounds-checked against the real size, so an access between the
// guest-visible and the real size succeeds where an unrewritten module
// would trap. The host zeroes that range when it restores, so what such
// an access reads is zeros, never what an earlier run wrote.

// MemorySizeVersion names the memory-size pass's output (see Pass).
const MemorySizeVersion = "memsize-1"

// MemorySizeExport is the export name of the global the memory-size pass
// adds: the guest-visible memory size, in pages.
const MemorySizeExport = "sandbank.memory_pages"

// MemorySizePass is the memory-size pass (MemorySize) as a Pass.
var MemorySizePass = Pass{Name: MemorySizeVersion, Apply: MemorySize}

// maxPages is the most pages a 32-bit memory can have.
const maxPages = 1 << 16

// ErrMemorySized is returned by MemorySize for a module that has the
// pass's export already (a module rewritten twice).
var ErrMemorySized = errors.New("rewrite: the module exports " + MemorySizeExport + " already")

// More opcodes the memory-size pass emits.
const (
	opMemoryGrow = 0x40
	opI32Eq      = 0x46
)

// MemorySize applies the memory-size pass to m. A module without a
// memory is left as it is. The added global starts at the memory's
// minimum as m.Memories (or the memory's import) gives it: a pass before
// this one that changes the memory's limits must change them there too,
// or the guest would see a memory smaller than the one it has. It refuses, with an error wrapping
// ErrUnsupported, a module with more than one memory, and with
// ErrMemorySized one it rewrote already.
func MemorySize(m *Module) error {
	for _, e := range m.Exports {
		if e.Name == MemorySizeExport {
			return ErrMemorySized
		}
	}
	mem, n, err := m.memory()
	if err != nil {
		return err
	}
	if n == 0 {
		for i, b := range m.Code {
			if err := walk(b.Code, func(in instr) error {
				if in.op == opMemorySize || in.op == opMemoryGrow {
					return fmt.Errorf("%w: memory.size or memory.grow without a memory in function body %d", ErrMalformed, i)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}
	limit := uint32(maxPages)
	if mem.HasMax && mem.Max < limit {
		limit = mem.Max
	}
	if mem.Min > limit {
		return fmt.Errorf("%w: memory minimum %d pages above its maximum %d", ErrMalformed, mem.Min, limit)
	}
	pages := m.ImportedGlobals() + uint32(len(m.Globals))
	grow := m.ImportedFuncs() + uint32(len(m.Funcs))
	for i := range m.Code {
		code, err := virtualiseSize(m.Code[i].Code, pages, grow)
		if err != nil {
			return fmt.Errorf("function body %d: %w", i, err)
		}
		m.Code[i].Code = code
	}
	m.Globals = append(m.Globals, Global{Type: I32, Mutable: true, Init: append(i32c(nil, int64(mem.Min)), opEnd)})
	m.Exports = append(m.Exports, Export{Name: MemorySizeExport, Kind: KindGlobal, Index: pages})
	m.Funcs = append(m.Funcs, m.addType(FuncType{Params: []byte{I32}, Results: []byte{I32}}))
	m.Code = append(m.Code, Body{Locals: []Locals{{Count: 1, Type: I32}}, Code: growHelper(pages, limit)})
	return nil
}

// memory returns the module's memory (imported or defined) and how many
// it has; more than one is refused.
func (m *Module) memory() (Memory, int, error) {
	var mems []Memory
	for _, im := range m.Imports {
		if im.Kind != KindMemory {
			continue
		}
		r := &reader{b: im.Desc}
		l := limits(r)
		if r.err != nil {
			return Memory{}, 0, r.err
		}
		mems = append(mems, Memory{Min: l.min, Max: l.max, HasMax: l.flags&1 != 0})
	}
	mems = append(mems, m.Memories...)
	switch len(mems) {
	case 0:
		return Memory{}, 0, nil
	case 1:
		return mems[0], 1, nil
	}
	return Memory{}, len(mems), fmt.Errorf("%w: %d memories (the memory-size pass rewrites one)", ErrUnsupported, len(mems))
}

// virtualiseSize rewrites memory.size into a read of global pages, and
// memory.grow into a call of function grow; every other byte stays.
func virtualiseSize(code []byte, pages, grow uint32) ([]byte, error) {
	var out []byte
	last := 0
	err := walk(code, func(in instr) error {
		switch in.op {
		case opMemorySize:
			out = append(out, code[last:in.start]...)
			out = op(out, opGlobalGet, pages)
		case opMemoryGrow:
			out = append(out, code[last:in.start]...)
			out = op(out, opCall, grow)
		default:
			return nil
		}
		last = in.end
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return code, nil
	}
	return append(out, code[last:]...), nil
}

// growHelper is the body of the function that replaces memory.grow:
// (n i32) -> i32, with one i32 local (the new size), for the global
// pages and a maximum of limit pages.
func growHelper(pages, limit uint32) []byte {
	const argN, newSize = 0, 1
	var out []byte
	// if u64(pages) + u64(n) > limit { return -1 }
	out = op(out, opGlobalGet, pages)
	out = append(out, opI64ExtendU)
	out = op(out, opLocalGet, argN)
	out = append(out, opI64ExtendU, opI64Add)
	out = appendS64(append(out, opI64Const), int64(limit))
	out = append(out, opI64GtU, opIf, blockVoid)
	out = i32c(out, -1)
	out = append(out, opReturn, opEnd)
	// newSize = pages + n (no overflow: it is at most limit)
	out = op(out, opGlobalGet, pages)
	out = op(out, opLocalGet, argN)
	out = append(out, opI32Add)
	out = op(out, opLocalSet, newSize)
	// if newSize > real { if memory.grow(newSize - real) == -1 { return -1 } }
	out = op(out, opLocalGet, newSize)
	out = append(out, opMemorySize, 0, opI32GtU, opIf, blockVoid)
	out = op(out, opLocalGet, newSize)
	out = append(out, opMemorySize, 0, opI32Sub, opMemoryGrow, 0)
	out = i32c(out, -1)
	out = append(out, opI32Eq, opIf, blockVoid)
	out = i32c(out, -1)
	out = append(out, opReturn, opEnd, opEnd)
	// old := pages; pages = newSize; return old
	out = op(out, opGlobalGet, pages)
	out = op(out, opLocalGet, newSize)
	out = op(out, opGlobalSet, pages)
	return append(out, opEnd)
}
