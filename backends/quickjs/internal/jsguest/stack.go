package jsguest

import (
	"bytes"
	"crypto/rand"
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// CanarySize is how many bytes at the bottom of the C stack the guard
// covers. A frame that crosses the bottom of the stack writes into them
// (1,549 of 1,549 over-deep runs measured for issue 4 clobbered a 16-byte
// canary); 1 KiB leaves margin for large, sparsely written frames.
const CanarySize = 1024

// Layout is where the module's C stack lives in linear memory. For the
// binary as it ships (ParseLayout) the stack grows down from the initial
// value of the __stack_pointer global (Top) to the end of the static
// data (Bottom), 64 KiB, and below Bottom lie the static data and the
// libc buffers, which an overflow silently overwrites: this build of
// QuickJS has no stack check. For the module the stack pass rewrote
// (GuardedLayout) it is the pass's region, bounded by its check.
type Layout struct {
	// Bottom is the lowest address of the stack (the end of the static
	// data, 16-byte aligned).
	Bottom uint32
	// Top is the initial stack pointer.
	Top uint32
}

// StackBytes is the size of the C stack.
func (l Layout) StackBytes() uint32 { return l.Top - l.Bottom }

// Bounds on a believable C stack: outside them the derivation is wrong,
// and the backend refuses to run unguarded.
const (
	minStackBytes = 8 << 10
	maxStackBytes = 64 << 20
)

// ParseLayout derives the stack region from a wasm binary: the initial
// value of the global named __stack_pointer (name section) is the top;
// the bottom is the end of the static data, the highest end of any data
// segment or of any global variable the DWARF debug information places in
// memory (the zero-initialised data has no segment). It fails when any of
// these is missing or the result is not a believable stack, so that a
// dependency update cannot silently disable the stack guard.
func ParseLayout(wasm []byte) (Layout, error) {
	m, err := readModule(wasm)
	if err != nil {
		return Layout{}, err
	}
	sp, ok := m.globalInit["__stack_pointer"]
	if !ok {
		return Layout{}, errors.New("quickjs: stack layout: no __stack_pointer global in the name section")
	}
	staticEnd, err := dwarfDataEnd(m.custom)
	if err != nil {
		return Layout{}, err
	}
	if m.dataEnd > staticEnd {
		staticEnd = m.dataEnd
	}
	bottom := (staticEnd + 15) &^ 15
	l := Layout{Bottom: bottom, Top: sp}
	switch {
	case sp <= bottom:
		return Layout{}, fmt.Errorf("quickjs: stack layout: stack pointer %d is not above the static data end %d", sp, bottom)
	case l.StackBytes() < minStackBytes || l.StackBytes() > maxStackBytes:
		return Layout{}, fmt.Errorf("quickjs: stack layout: implausible stack of %d bytes", l.StackBytes())
	case uint64(sp) > uint64(m.minPages)*65536:
		return Layout{}, fmt.Errorf("quickjs: stack layout: stack pointer %d beyond the initial memory", sp)
	}
	return l, nil
}

// Canary is the random content written into the lowest CanarySize bytes
// of the stack before a run and checked after it.
type Canary [CanarySize]byte

// NewCanary returns fresh random canary bytes, so that no script can know
// what to write back.
func NewCanary() (*Canary, error) {
	c := new(Canary)
	if _, err := rand.Read(c[:]); err != nil {
		return nil, fmt.Errorf("quickjs: canary: %w", err)
	}
	return c, nil
}

// Intact reports whether mem (the bytes read back from the canary's
// place) still holds the canary.
func (c *Canary) Intact(mem []byte) bool { return bytes.Equal(c[:], mem) }

// module is what ParseLayout needs from a wasm binary.
type module struct {
	globalInit map[string]uint32 // named i32 globals with a constant init
	dataEnd    uint32            // highest end of an active data segment
	minPages   uint32            // the memory's initial size
	custom     map[string][]byte // the DWARF sections by name
}

// readModule reads what ParseLayout needs with the project's one wasm
// decoder (internal/wasm/rewrite).
func readModule(wasm []byte) (*module, error) {
	d, err := wasmrewrite.Decode(wasm)
	if err != nil {
		return nil, fmt.Errorf("quickjs: stack layout: %w", err)
	}
	m := &module{globalInit: map[string]uint32{}, custom: map[string][]byte{}}
	names := d.GlobalNames()
	imported := d.ImportedGlobals()
	for i, g := range d.Globals {
		if v, ok := wasmrewrite.ConstI32(g.Init); ok && g.Type == wasmrewrite.I32 {
			if name, ok := names[imported+uint32(i)]; ok {
				m.globalInit[name] = uint32(v)
			}
		}
	}
	for _, seg := range d.Data {
		if off, ok := wasmrewrite.ConstI32(seg.Offset); ok && seg.Active && uint32(off)+seg.Size > m.dataEnd {
			m.dataEnd = uint32(off) + seg.Size
		}
	}
	if len(d.Memories) > 0 {
		m.minPages = d.Memories[0].Min
	}
	for _, name := range []string{".debug_info", ".debug_abbrev", ".debug_line", ".debug_ranges", ".debug_str"} {
		if b := d.Custom(name); b != nil {
			m.custom[name] = b
		}
	}
	return m, nil
}

// dwarfDataEnd returns the highest end address of any variable the DWARF
// information places at a fixed address in linear memory.
func dwarfDataEnd(custom map[string][]byte) (uint32, error) {
	info, abbrev := custom[".debug_info"], custom[".debug_abbrev"]
	if len(info) == 0 || len(abbrev) == 0 {
		return 0, errors.New("quickjs: stack layout: the module has no DWARF information to find its static data")
	}
	d, err := dwarf.New(abbrev, nil, nil, info, custom[".debug_line"], nil, custom[".debug_ranges"], custom[".debug_str"])
	if err != nil {
		return 0, fmt.Errorf("quickjs: stack layout: DWARF: %w", err)
	}
	var end uint64
	vars := 0
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return 0, fmt.Errorf("quickjs: stack layout: DWARF: %w", err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagVariable {
			continue
		}
		loc, ok := e.Val(dwarf.AttrLocation).([]byte)
		if !ok || len(loc) != 5 || loc[0] != 0x03 { // DW_OP_addr, 4-byte address
			continue
		}
		addr := uint64(binary.LittleEndian.Uint32(loc[1:]))
		if addr == 0xffffffff { // a variable the linker discarded
			continue
		}
		size := int64(1)
		if off, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok {
			if t, err := d.Type(off); err == nil && t.Size() > 0 {
				size = t.Size()
			}
		}
		vars++
		if addr+uint64(size) > end {
			end = addr + uint64(size)
		}
	}
	if vars == 0 || end > 0xffffffff {
		return 0, errors.New("quickjs: stack layout: the DWARF information places no variable in memory")
	}
	return uint32(end), nil
}

// StackPass is the stack pass (internal/wasm/rewrite) the engines apply to
// the module, for a C stack of stackBytes: the module gets a stack region
// of its own after its initial memory, and a bound check after every
// move of its stack pointer, which keeps the lowest CanarySize bytes of
// the region (where the canary lies) out of every frame's reach. With it,
// a deep recursion is stopped before it writes one byte outside its
// stack, and the canary is a second line of defence.
func StackPass(stackBytes uint32) wasmrewrite.Stack {
	return wasmrewrite.Stack{Size: stackBytes, Guard: CanarySize}
}

// GuardedLayout is the stack region of wasm once StackPass(stackBytes)
// has rewritten it: Bottom is the region's bottom (where the canary
// goes), Top the stack pointer's initial value. It fails, as the pass
// does, on a module the pass refuses.
func GuardedLayout(wasm []byte, stackBytes uint32) (Layout, error) {
	m, err := wasmrewrite.Decode(wasm)
	if err != nil {
		return Layout{}, fmt.Errorf("quickjs: stack layout: %w", err)
	}
	r, err := StackPass(stackBytes).Plan(m)
	if err != nil {
		return Layout{}, fmt.Errorf("quickjs: stack layout: %w", err)
	}
	return Layout{Bottom: r.Bottom, Top: r.Top}, nil
}
