package rewrite

import (
	"errors"
	"fmt"
)

// The preemption pass.
//
// Every function entry and every loop header is charged one unit, and
// every bulk memory or table operation one unit per KiB it covers
// (memory.fill and memory.copy are done by added helper functions in
// chunks of BulkChunk bytes, each chunk charged before it runs). Charges
// come off a budget held in an added mutable global; when the budget is
// zero or less, the guest calls the imported host function
// PreemptModule.PreemptName with the budget and continues with the new
// budget it returns. The host grants a budget of N units each time, so
// the guest visits Go at least every N units of work (plus one chunk of a
// bulk operation): the goroutine stays preemptible by the Go runtime, and
// the host can stop the run at a visit (by trapping) when its context is
// done. A unit is one loop iteration or function call, or one KiB of bulk
// memory or table work.

// Where the preemption pass imports its host function from.
const (
	PreemptModule = "sandbank"
	PreemptName   = "preempt"
)

// BulkChunk is the largest piece of a memory.fill or memory.copy done
// between two charges.
const BulkChunk = 256 << 10

// PreemptVersion names the preemption pass's output: it changes whenever
// the pass writes a different module for the same input, so that a
// cache of rewritten or compiled modules can include it in its key.
const PreemptVersion = "preempt-1"

// errRewritten is returned for a module that imports the pass's host
// function already.
var errRewritten = errors.New("rewrite: the module imports " + PreemptModule + "." + PreemptName + " already")

// Preempt applies the preemption pass to m. It refuses (with an error)
// a module that imports the pass's host function already.
func Preempt(m *Module) error {
	for _, im := range m.Imports {
		if im.Module == PreemptModule && im.Name == PreemptName {
			return errRewritten
		}
	}
	nImp := m.ImportedFuncs()
	p := &preempter{
		m:      m,
		check:  nImp,
		budget: m.ImportedGlobals() + uint32(len(m.Globals)),
	}
	checkType := m.addType(FuncType{Params: []byte{I32}, Results: []byte{I32}})
	bulkType := m.addType(FuncType{Params: []byte{I32, I32, I32}})
	m.Imports = append(m.Imports, Import{Module: PreemptModule, Name: PreemptName, Kind: KindFunc, Type: checkType})
	// The bodies' calls are shifted by p.body, in the same walk.
	if err := m.shiftFuncs(nImp, 1, false); err != nil {
		return err
	}
	m.Globals = append(m.Globals, Global{Type: I32, Mutable: true, Init: []byte{opI32Const, 0, opEnd}})
	defined := nImp + 1 + uint32(len(m.Funcs))
	p.fill, p.copy = defined, defined+1
	for i := range m.Code {
		params := uint32(len(m.Types[m.Funcs[i]].Params))
		if err := p.body(&m.Code[i], params); err != nil {
			return fmt.Errorf("function %d: %w", int(nImp)+i, err)
		}
	}
	if p.bulk { // only a module with a memory has bulk memory operations
		m.Funcs = append(m.Funcs, bulkType, bulkType)
		m.Code = append(m.Code, Body{Code: p.fillHelper()}, Body{Code: p.copyHelper()})
	}
	return nil
}

// addType returns the index of type t, adding it when m lacks it.
func (m *Module) addType(t FuncType) uint32 {
	for i, u := range m.Types {
		if u.equal(t) {
			return uint32(i)
		}
	}
	m.Types = append(m.Types, t)
	return uint32(len(m.Types) - 1)
}

// shiftFuncs adds by to every function index from on: in bodies (when
// bodies is set), exports, the start function, element segments, global
// initialisers and the name section.
func (m *Module) shiftFuncs(from, by uint32, bodies bool) error {
	shift := func(i uint32) uint32 {
		if i >= from {
			return i + by
		}
		return i
	}
	if err := redirectFuncs(m, shift, bodies); err != nil {
		return err
	}
	if m.Names != nil {
		for i := range m.Names.Subsections {
			s := &m.Names.Subsections[i]
			for k := range s.Map {
				s.Map[k].Index = shift(s.Map[k].Index)
			}
			for k := range s.Indirect {
				s.Indirect[k].Index = shift(s.Indirect[k].Index)
			}
		}
	}
	return nil
}

// preempter instruments the bodies of one module.
type preempter struct {
	m      *Module
	check  uint32 // the host function's index
	budget uint32 // the budget global's index
	fill   uint32 // the helper functions' indices
	copy   uint32
	bulk   bool // a body calls a helper
}

// body instruments one function body whose function has params
// parameters.
func (p *preempter) body(b *Body, params uint32) error {
	scratch := params
	for _, l := range b.Locals {
		scratch += l.Count
	}
	usesScratch := false
	out := p.charge(nil, 1)
	last := 0
	err := walk(b.Code, func(in instr) error {
		switch {
		case (in.op == opCall || in.op == opRefFunc) && in.funcIdx >= p.check:
			out = append(out, b.Code[last:in.start]...)
			out = appendU32(append(out, in.op), in.funcIdx+1)
			last = in.end
		case in.op == opLoop:
			out = append(out, b.Code[last:in.end]...)
			out = p.charge(out, 1)
			last = in.end
		case in.op == opPrefixFC && (in.sub == fcMemoryFill || in.sub == fcMemoryCopy):
			out = append(out, b.Code[last:in.start]...)
			helper := p.fill
			if in.sub == fcMemoryCopy {
				helper = p.copy
			}
			out = appendU32(append(out, opCall), helper)
			p.bulk = true
			last = in.end
		case in.op == opPrefixFC && (in.sub == fcMemoryInit || in.sub == fcTableInit || in.sub == fcTableCopy ||
			in.sub == fcTableFill || in.sub == fcTableGrow):
			// The count is on top of the stack: charge it, then run.
			out = append(out, b.Code[last:in.start]...)
			out = appendU32(append(out, opLocalTee), scratch)
			out = p.chargeLocal(out, scratch)
			usesScratch = true
			last = in.start
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.Code = append(out, b.Code[last:]...)
	if usesScratch {
		b.Locals = append(b.Locals, Locals{Count: 1, Type: I32})
	}
	return nil
}

// charge appends code that takes cost units off the budget and visits
// the host when it is spent.
func (p *preempter) charge(out []byte, cost int64) []byte {
	out = appendU32(append(out, opGlobalGet), p.budget)
	out = appendS64(append(out, opI32Const), cost)
	out = append(out, opI32Sub)
	out = appendU32(append(out, opGlobalSet), p.budget)
	return p.visit(out)
}

// chargeLocal appends code that takes one unit per KiB of the byte count
// in local l off the budget and visits the host when it is spent.
func (p *preempter) chargeLocal(out []byte, l uint32) []byte {
	out = appendU32(append(out, opGlobalGet), p.budget)
	out = appendU32(append(out, opLocalGet), l)
	out = append(out, opI32Const, 10, opI32ShrU, opI32Sub)
	out = appendU32(append(out, opGlobalSet), p.budget)
	return p.visit(out)
}

// visit appends: if budget <= 0 { budget = check(budget) }.
func (p *preempter) visit(out []byte) []byte {
	out = appendU32(append(out, opGlobalGet), p.budget)
	out = append(out, opI32Const, 0, opI32LeS, opIf, blockVoid)
	out = appendU32(append(out, opGlobalGet), p.budget)
	out = appendU32(append(out, opCall), p.check)
	out = appendU32(append(out, opGlobalSet), p.budget)
	return append(out, opEnd)
}
