package guest

import (
	"bytes"
	"crypto/rand"
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
)

// CanarySize is how many bytes at the bottom of the C stack the guard
// covers. A frame that crosses the bottom of the stack writes into them
// (1,549 of 1,549 over-deep runs measured for issue 4 clobbered a 16-byte
// canary); 1 KiB leaves margin for large, sparsely written frames.
const CanarySize = 1024

// Layout is where the module's C stack lives in linear memory, derived
// from the binary itself: the stack grows down from the initial value of
// the __stack_pointer global (Top) to the end of the static data (Bottom).
// Below Bottom lie the static data and the libc buffers, which an
// overflow silently overwrites: this build of QuickJS has no stack check.
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
	custom     map[string][]byte // custom sections by name
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("quickjs: stack layout: malformed wasm (%s)", what)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) u32() uint32 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if v > 0xffffffff {
				r.fail("u32 overflow")
			}
			return uint32(v)
		}
	}
	r.fail("u32 too long")
	return 0
}

// i32const reads a constant expression of the form i32.const N; end and
// reports N, or false for any other expression (which it skips).
func (r *reader) i32const() (uint32, bool) {
	op := r.byte()
	if op != 0x41 {
		for r.err == nil && op != 0x0b {
			op = r.byte()
		}
		return 0, false
	}
	var v int64
	var shift uint
	for {
		c := r.byte()
		if r.err != nil {
			return 0, false
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			break
		}
		if shift > 35 {
			r.fail("i32 too long")
			return 0, false
		}
	}
	if r.byte() != 0x0b {
		r.fail("constant expression")
		return 0, false
	}
	return uint32(v), true
}

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil || uint64(n) > uint64(len(r.b)) {
		r.fail("truncated")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) name() string { return string(r.bytes(r.u32())) }

func readModule(wasm []byte) (*module, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) || binary.LittleEndian.Uint32(wasm[4:8]) != 1 {
		return nil, errors.New("quickjs: stack layout: not a wasm 1.0 binary")
	}
	m := &module{globalInit: map[string]uint32{}, custom: map[string][]byte{}}
	top := &reader{b: wasm[8:]}
	var importedGlobals uint32
	inits := map[uint32]uint32{}
	var names map[uint32]string
	for len(top.b) > 0 && top.err == nil {
		id := top.byte()
		sec := &reader{b: top.bytes(top.u32())}
		if top.err != nil {
			break
		}
		switch id {
		case 0:
			name := sec.name()
			if sec.err == nil {
				m.custom[name] = sec.b
				if name == "name" {
					names = globalNames(sec.b)
				}
			}
		case 2: // imports: count the imported globals (they come first)
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				sec.name()
				sec.name()
				switch sec.byte() {
				case 0:
					sec.u32()
				case 1:
					sec.byte()
					skipLimits(sec)
				case 2:
					skipLimits(sec)
				case 3:
					sec.byte()
					sec.byte()
					importedGlobals++
				default:
					sec.fail("import kind")
				}
			}
		case 5: // memory
			if sec.u32() > 0 {
				flags := sec.byte()
				m.minPages = sec.u32()
				if flags&1 != 0 {
					sec.u32()
				}
			}
		case 6: // globals
			n := sec.u32()
			for i := uint32(0); i < n && sec.err == nil; i++ {
				vt := sec.byte()
				sec.byte() // mutability
				v, ok := sec.i32const()
				if ok && vt == 0x7f {
					inits[importedGlobals+i] = v
				}
			}
		case 11: // data
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				flags := sec.u32()
				var off uint32
				active := false
				switch flags {
				case 0:
					off, active = sec.i32const()
				case 1:
				case 2:
					sec.u32()
					off, active = sec.i32const()
				default:
					sec.fail("data segment flags")
				}
				size := sec.u32()
				sec.bytes(size)
				if active && off+size > m.dataEnd {
					m.dataEnd = off + size
				}
			}
		}
		if sec.err != nil {
			return nil, sec.err
		}
	}
	if top.err != nil {
		return nil, top.err
	}
	for idx, v := range inits {
		if name, ok := names[idx]; ok {
			m.globalInit[name] = v
		}
	}
	return m, nil
}

func skipLimits(r *reader) {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

// globalNames reads the global-names subsection (id 7) of a name section.
func globalNames(b []byte) map[uint32]string {
	out := map[uint32]string{}
	r := &reader{b: b}
	for len(r.b) > 0 && r.err == nil {
		id := r.byte()
		sub := &reader{b: r.bytes(r.u32())}
		if id != 7 {
			continue
		}
		for n := sub.u32(); n > 0 && sub.err == nil; n-- {
			idx := sub.u32()
			name := sub.name()
			if sub.err == nil {
				out[idx] = name
			}
		}
	}
	return out
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
