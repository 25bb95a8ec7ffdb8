package rewrite

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// Section ids of the binary format.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// sectionRank is the order the known sections must come in.
var sectionRank = map[byte]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secTag: 6,
	secGlobal: 7, secExport: 8, secStart: 9, secElement: 10, secDataCount: 11, secCode: 12, secData: 13,
}

// Import kinds (also export kinds).
const (
	KindFunc   = 0
	KindTable  = 1
	KindMemory = 2
	KindGlobal = 3
)

// Value types.
const (
	I32 = 0x7f
	I64 = 0x7e
)

// FuncType is a function signature: its parameter and result value types.
type FuncType struct {
	Params, Results []byte
}

func (t FuncType) equal(u FuncType) bool {
	return bytes.Equal(t.Params, u.Params) && bytes.Equal(t.Results, u.Results)
}

// Import is one import. Desc is the raw import description after its
// kind byte, except for functions, whose type index is in Type.
type Import struct {
	Module, Name string
	Kind         byte
	Type         uint32 // KindFunc: the type index
	Desc         []byte // other kinds: the raw table, memory or global type
}

// Global is one defined global: its type, mutability and initialiser
// (a constant expression, with its end).
type Global struct {
	Type    byte
	Mutable bool
	Init    []byte
}

// Export is one export.
type Export struct {
	Name  string
	Kind  byte
	Index uint32
}

// Element is one element segment, in any of its eight encodings (Flags).
type Element struct {
	Flags  uint32
	Table  uint32   // flags 2 and 6
	Offset []byte   // active segments: the offset expression
	Kind   byte     // the element kind (flags 1-3) or reference type (5-7)
	Funcs  []uint32 // flags 0-3: the function indices
	Exprs  [][]byte // flags 4-7: the element expressions
}

// Locals is one run of a body's local declarations.
type Locals struct {
	Count uint32
	Type  byte
}

// Body is one function body: its locals and its expression (with the
// final end).
type Body struct {
	Locals []Locals
	Code   []byte
}

// Data is what the rewriter reads of a data segment.
type Data struct {
	Active bool
	Offset []byte // active segments: the offset expression
	Size   uint32
}

// Memory is a memory's limits, in pages.
type Memory struct {
	Min    uint32
	Max    uint32
	HasMax bool
}

// Module is a decoded module. The sections a pass may change are decoded
// into the fields below; every other section is kept as it came and
// written back unchanged, in its place.
type Module struct {
	Types    []FuncType
	Imports  []Import
	Funcs    []uint32 // the type index of every defined function
	Globals  []Global
	Exports  []Export
	Start    *uint32
	Elements []Element
	Code     []Body
	// Memories and Data are decoded for reading only: the rewriter
	// writes their sections back as they came.
	Memories []Memory
	Data     []Data
	// memoryEdited is set by a pass that changed Memories: the memory
	// section is then encoded from it.
	memoryEdited bool
	// Names is the decoded name section, nil without one.
	Names *Names

	parts []part
}

// part is one section in the order of the binary.
type part struct {
	id   byte
	name string // custom sections
	raw  []byte // the payload as decoded
	drop bool
	// sizeWidth is how many bytes the binary spent on the payload's size:
	// some toolchains (Go's linker) pad it to five, and the encoder keeps
	// their width so that a round trip gives the same bytes back.
	sizeWidth int
}

// Names is the name section: its subsections by id, raw, with the
// function names (1) and local names (2) decoded, since they hold
// function indices.
type Names struct {
	Subsections []NameSub
}

// NameSub is one subsection of the name section.
type NameSub struct {
	ID  byte
	Raw []byte // every subsection but 1 and 2
	// Map is subsection 1 (function index → name); Indirect is subsection
	// 2 (function index → its local names, raw).
	Map      []NameAssoc
	Indirect []IndirectAssoc

	sizeWidth int // the bytes the binary spent on the subsection's size (see part)
}

// NameAssoc names one index.
type NameAssoc struct {
	Index uint32
	Name  string
}

// IndirectAssoc is the local names of one function.
type IndirectAssoc struct {
	Index uint32
	Raw   []byte // its name map, raw
}

// Decode decodes a binary module. It fails, wrapping ErrMalformed or
// ErrUnsupported, on anything it does not understand: a section it does
// not know, a feature it cannot rewrite (SIMD, threads, exceptions, tail
// calls, multiple memories, GC types), an instruction it cannot decode.
func Decode(wasm []byte) (*Module, error) {
	top, err := sections(wasm)
	if err != nil {
		return nil, err
	}
	m := &Module{}
	last := 0
	for !top.done() {
		p, r, err := nextSection(top)
		if err != nil {
			return nil, err
		}
		id := p.id
		if id == secCustom {
			p.name = r.name()
		} else {
			rank, ok := sectionRank[id]
			if !ok {
				return nil, fmt.Errorf("%w: section id %d", ErrUnsupported, id)
			}
			if rank <= last {
				return nil, fmt.Errorf("%w: section %d out of order", ErrMalformed, id)
			}
			last = rank
		}
		if err := m.decodeSection(&p, r); err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
		m.parts = append(m.parts, p)
	}
	if top.err != nil {
		return nil, top.err
	}
	if len(m.Funcs) != len(m.Code) {
		return nil, fmt.Errorf("%w: %d functions but %d bodies", ErrMalformed, len(m.Funcs), len(m.Code))
	}
	types := uint32(len(m.Types))
	for i, t := range m.Funcs {
		if t >= types {
			return nil, fmt.Errorf("%w: function %d has type %d of %d", ErrMalformed, i, t, types)
		}
	}
	for i, im := range m.Imports {
		if im.Kind == KindFunc && im.Type >= types {
			return nil, fmt.Errorf("%w: import %d has type %d of %d", ErrMalformed, i, im.Type, types)
		}
	}
	return m, nil
}

// sections checks wasm's header and returns a reader of its sections.
func sections(wasm []byte) (*reader, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, fmt.Errorf("%w: not a wasm binary", ErrMalformed)
	}
	if v := binary.LittleEndian.Uint32(wasm[4:8]); v != 1 {
		return nil, fmt.Errorf("%w: binary version %d (a component, or a future format)", ErrUnsupported, v)
	}
	return &reader{b: wasm[8:], off: 8}, nil
}

// nextSection reads the next section of top: the part, and a reader of
// its payload.
func nextSection(top *reader) (part, *reader, error) {
	id := top.byte()
	sizeAt := top.off
	size := top.u32()
	start := top.off
	payload := top.bytes(size)
	if top.err != nil {
		return part{}, nil, top.err
	}
	return part{id: id, raw: payload, sizeWidth: start - sizeAt}, &reader{b: payload, off: start}, nil
}

func (m *Module) decodeSection(p *part, r *reader) error {
	switch p.id {
	case secCustom:
		if p.name == "name" {
			m.Names = decodeNames(r)
		}
	case secType:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			if form := r.byte(); form != 0x60 && r.err == nil {
				r.unsupported("type form 0x%02x (GC types)", form)
			}
			var t FuncType
			for k := r.u32(); k > 0 && r.err == nil; k-- {
				t.Params = append(t.Params, valType(r))
			}
			for k := r.u32(); k > 0 && r.err == nil; k-- {
				t.Results = append(t.Results, valType(r))
			}
			m.Types = append(m.Types, t)
		}
	case secImport:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			im := Import{Module: r.name(), Name: r.name(), Kind: r.byte()}
			start := r.b
			switch im.Kind {
			case KindFunc:
				im.Type = r.u32()
			case KindTable:
				refType(r)
				limits(r)
			case KindMemory:
				if mem := limits(r); mem.flags&^1 != 0 && r.err == nil {
					r.unsupported("memory flags %d (shared or 64-bit memory)", mem.flags)
				}
			case KindGlobal:
				valType(r)
				r.byte()
			default:
				r.unsupported("import kind %d", im.Kind)
			}
			if im.Kind != KindFunc {
				im.Desc = start[:len(start)-len(r.b)]
			}
			m.Imports = append(m.Imports, im)
		}
	case secFunction:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			m.Funcs = append(m.Funcs, r.u32())
		}
	case secMemory:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			l := limits(r)
			if l.flags&^1 != 0 && r.err == nil {
				r.unsupported("memory flags %d (shared or 64-bit memory)", l.flags)
			}
			m.Memories = append(m.Memories, Memory{Min: l.min, Max: l.max, HasMax: l.flags&1 != 0})
		}
		if len(m.Memories) > 1 {
			r.unsupported("multiple memories")
		}
	case secGlobal:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			g := Global{Type: valType(r)}
			switch mut := r.byte(); mut {
			case 0, 1:
				g.Mutable = mut == 1
			default:
				r.fail("global mutability %d", mut)
			}
			g.Init = constExpr(r)
			m.Globals = append(m.Globals, g)
		}
	case secExport:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			e := Export{Name: r.name(), Kind: r.byte(), Index: r.u32()}
			if e.Kind > KindGlobal && r.err == nil {
				r.unsupported("export kind %d", e.Kind)
			}
			m.Exports = append(m.Exports, e)
		}
	case secStart:
		s := r.u32()
		m.Start = &s
	case secElement:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			m.Elements = append(m.Elements, decodeElement(r))
		}
	case secCode:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			size := r.u32()
			br := &reader{b: r.bytes(size), off: r.off - int(size)}
			var body Body
			for k := br.u32(); k > 0 && br.err == nil; k-- {
				body.Locals = append(body.Locals, Locals{Count: br.u32(), Type: valType(br)})
			}
			if br.err != nil {
				return br.err
			}
			body.Code = br.b
			if err := walk(body.Code, func(instr) error { return nil }); err != nil {
				return fmt.Errorf("function body %d: %w", len(m.Code), err)
			}
			m.Code = append(m.Code, body)
		}
	case secData:
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			var d Data
			switch flags := r.u32(); flags {
			case 0:
				d.Active, d.Offset = true, constExpr(r)
			case 1:
			case 2:
				if r.u32() != 0 {
					r.unsupported("multiple memories")
				}
				d.Active, d.Offset = true, constExpr(r)
			default:
				r.fail("data segment flags %d", flags)
			}
			d.Size = r.u32()
			r.bytes(d.Size)
			m.Data = append(m.Data, d)
		}
	case secTag:
		r.unsupported("exception tags")
	case secTable, secDataCount:
		return nil // kept raw, nothing in them refers to a function
	}
	if r.err != nil {
		return r.err
	}
	if p.id != secCustom && len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the section's contents", ErrMalformed, len(r.b))
	}
	return nil
}

type limitsT struct {
	flags    byte
	min, max uint32
}

func limits(r *reader) limitsT {
	l := limitsT{flags: r.byte()}
	l.min = r.u32()
	if l.flags&1 != 0 {
		l.max = r.u32()
	}
	return l
}

// constExpr reads a constant expression with its end.
func constExpr(r *reader) []byte {
	if r.err != nil {
		return nil
	}
	n, err := walkPrefix(r.b, true, func(instr) error { return nil })
	if err != nil {
		r.err = err
		return nil
	}
	return r.bytes(uint32(n))
}

func decodeElement(r *reader) Element {
	e := Element{Flags: r.u32()}
	if e.Flags > 7 {
		r.fail("element segment flags %d", e.Flags)
		return e
	}
	if e.Flags&1 == 0 { // active
		if e.Flags&2 != 0 {
			e.Table = r.u32()
		}
		e.Offset = constExpr(r)
	}
	exprs := e.Flags&4 != 0
	if e.Flags&3 != 0 {
		if exprs {
			e.Kind = refType(r)
		} else {
			e.Kind = r.byte()
			if e.Kind != 0 && r.err == nil {
				r.unsupported("element kind %d", e.Kind)
			}
		}
	}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		if exprs {
			e.Exprs = append(e.Exprs, constExpr(r))
		} else {
			e.Funcs = append(e.Funcs, r.u32())
		}
	}
	return e
}

func decodeNames(r *reader) *Names {
	names := &Names{}
	for !r.done() {
		sub := NameSub{ID: r.byte()}
		sizeAt := r.off
		size := r.u32()
		sub.sizeWidth = r.off - sizeAt
		sr := &reader{b: r.bytes(size), off: r.off - int(size)}
		if r.err != nil {
			break
		}
		switch sub.ID {
		case 1:
			for n := sr.u32(); n > 0 && sr.err == nil; n-- {
				sub.Map = append(sub.Map, NameAssoc{Index: sr.u32(), Name: sr.name()})
			}
		case 2:
			for n := sr.u32(); n > 0 && sr.err == nil; n-- {
				a := IndirectAssoc{Index: sr.u32()}
				start := sr.b
				for k := sr.u32(); k > 0 && sr.err == nil; k-- {
					sr.u32()
					sr.name()
				}
				a.Raw = start[:len(start)-len(sr.b)]
				sub.Indirect = append(sub.Indirect, a)
			}
		default:
			sub.Raw = sr.b
			sr.b = nil
		}
		if sr.err == nil && len(sr.b) != 0 {
			sr.fail("bytes after a name subsection")
		}
		if sr.err != nil {
			r.err = sr.err
			break
		}
		names.Subsections = append(names.Subsections, sub)
	}
	return names
}

// ImportedFuncs is how many functions the module imports; defined
// function i has index ImportedFuncs()+i.
func (m *Module) ImportedFuncs() uint32 { return m.imported(KindFunc) }

// ImportedGlobals is how many globals the module imports.
func (m *Module) ImportedGlobals() uint32 { return m.imported(KindGlobal) }

func (m *Module) imported(kind byte) uint32 {
	var n uint32
	for _, im := range m.Imports {
		if im.Kind == kind {
			n++
		}
	}
	return n
}

// Custom returns the payload of the first custom section called name
// (after its name), or nil.
func (m *Module) Custom(name string) []byte {
	for _, p := range m.parts {
		if p.id == secCustom && p.name == name && !p.drop {
			r := &reader{b: p.raw}
			r.name()
			return r.b
		}
	}
	return nil
}

// DropCustom removes every custom section whose name has the prefix.
func (m *Module) DropCustom(prefix string) {
	for i, p := range m.parts {
		if p.id == secCustom && strings.HasPrefix(p.name, prefix) {
			m.parts[i].drop = true
		}
	}
}
