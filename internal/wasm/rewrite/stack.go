package rewrite

import (
	"bytes"
	"errors"
	"fmt"
)

// The stack pass.
//
// A module built by LLVM for wasm32 (wasi-libc, QuickJS) keeps its C
// stack in linear memory: the mutable global __stack_pointer holds the
// stack's top, functions move it down on entry and back on exit, and
// nothing checks it against anything, so a deep recursion writes on into
// the static data below the stack. The pass gives the module a stack of
// its own, bounded:
//
//   - the memory's initial size grows by Stack.Size bytes, and the stack
//     pointer starts at the top of that new region, so the stack is the
//     region [Bottom, Top) of StackRegion;
//   - after every global.set of the stack pointer the pass inserts a
//     check: when the new value is below StackRegion.Limit (or above
//     Top: it wrapped around), the guest
//     calls the imported host function PreemptModule.StackOverflowName
//     (which records the overflow and traps) and, should it return,
//     traps itself (unreachable). Limit is Bottom + Guard + StackRedZone,
//     so no frame ever writes below Bottom + Guard;
//   - the check also keeps the lowest value the stack pointer took in an
//     added global, exported as StackLowName.
//
// Why no frame writes below the stack pointer it set: wasm addresses are
// the base plus an unsigned offset, and LLVM addresses a frame from the
// value it stored in the stack pointer. The one exception is LLVM's red
// zone: a leaf function (no calls) whose frame is at most 128 bytes
// (StackRedZone) reads the stack pointer and uses the bytes below it
// without moving it (on QuickJS-NG 0.11: strspn, js_std_cmd and
// code_match, with frames of 16 to 32 bytes; lre_check_stack_overflow
// reads it only to compare). The Limit keeps StackRedZone bytes
// of room for them. The pass checks every read of the stack pointer
// against the shapes LLVM emits (see checkShapes) and refuses a module
// with any other: a function that reads it, subtracts and stores before
// setting it, other than a red-zone leaf, would escape the check.
//
// Where the region comes from, checked on QuickJS-NG 0.11's binary:
// wasi-libc's dlmalloc takes its initial heap from the linker constants
// __heap_base and __heap_end (i32.const 193056 and 196608 in dlmalloc's
// inlined try_init_allocator), never from the memory's size, so the
// pages the pass adds after __heap_end are not in its heap. memory.size
// and memory.grow appear only in sbrk: sbrk(0), which dlmalloc calls
// only before it has a top chunk (never, after the constants seeded it),
// would return the end of the region; sbrk(n) grows the memory and
// returns the old end, which is above the region. dlmalloc sees that the
// new space does not follow its first segment and adds it as a segment
// of its own (non-contiguous MORECORE), so the region between stays
// outside the heap. The old 64 KiB stack below __heap_base is left
// unused.

// StackOverflowName is the name of the host function the stack pass
// imports from PreemptModule: it takes and returns nothing, and must
// record the overflow and trap (a host function that returns lets the
// guest trap with unreachable, which looks like any other trap).
const StackOverflowName = "stack_overflow"

// StackPointerName is the name (in the name section) of the global the
// stack pass bounds.
const StackPointerName = "__stack_pointer"

// StackLowName is the name under which the stack pass exports the stack
// pointer's low-water mark: a mutable i32 global that starts at the
// stack's top and that every check lowers to the stack pointer, so that
// a host that saved the memory can tell how much of the stack a run may
// have written (everything from the mark less StackRedZone up) and set
// the mark back.
const StackLowName = "sandbank_stack_low"

// StackRedZone is how many bytes below the stack pointer a leaf function
// may write without moving it: LLVM's wasm red zone.
const StackRedZone = 128

// DefaultStackSize is the stack a zero Stack.Size means: 1 MiB.
const DefaultStackSize = 1 << 20

// MaxStackSize is the largest Stack.Size: 1 GiB.
const MaxStackSize = 1 << 30

const pageSize = 65536

// ErrStackShape is wrapped by the stack pass's refusals: the module has
// no stack pointer it can identify, or uses it in a way the pass does
// not understand.
var ErrStackShape = errors.New("rewrite: stack pass")

// Stack configures the stack pass.
type Stack struct {
	// Size is the stack's size in bytes, a multiple of 64 KiB. Zero means
	// DefaultStackSize.
	Size uint32
	// Guard is how many bytes at the bottom of the stack no frame may
	// reach: the host may keep a canary there, which stays intact as long
	// as the check holds. It must leave at least half the stack usable.
	Guard uint32
}

// StackRegion is where the stack pass puts the stack.
type StackRegion struct {
	// Bottom is the region's lowest address (the module's initial memory
	// size before the pass); Top its end, the stack pointer's initial
	// value.
	Bottom, Top uint32
	// Limit is the lowest value the stack pointer may take: Bottom +
	// Guard + StackRedZone.
	Limit uint32
}

func (s Stack) size() uint32 {
	if s.Size == 0 {
		return DefaultStackSize
	}
	return s.Size
}

// Pass returns the stack pass as a Pass; its name includes the size and
// the guard.
func (s Stack) Pass() Pass {
	return Pass{Name: fmt.Sprintf("stack-2:%d:%d", s.size(), s.Guard), Apply: s.Apply}
}

// stackPlan is what the pass found in a module.
type stackPlan struct {
	region  StackRegion
	sp      uint32 // the stack pointer's global index
	newMin  uint32 // the memory's new initial size, in pages
	written int    // how many global.set of the stack pointer there are
}

// Plan returns where the pass would put the stack of m, or why it
// refuses m (an error wrapping ErrStackShape). It does not change m.
func (s Stack) Plan(m *Module) (StackRegion, error) {
	p, err := s.plan(m)
	return p.region, err
}

func (s Stack) plan(m *Module) (stackPlan, error) {
	size := s.size()
	switch {
	case size%pageSize != 0 || size > MaxStackSize:
		return stackPlan{}, fmt.Errorf("%w: a stack of %d bytes is not a multiple of 64 KiB up to 1 GiB", ErrStackShape, size)
	case uint64(s.Guard)+StackRedZone > uint64(size)/2:
		return stackPlan{}, fmt.Errorf("%w: a guard of %d bytes leaves less than half the stack", ErrStackShape, s.Guard)
	}
	for _, im := range m.Imports {
		if im.Kind == KindFunc && im.Module == PreemptModule && im.Name == StackOverflowName {
			return stackPlan{}, fmt.Errorf("%w: the module imports %s.%s already", ErrStackShape, PreemptModule, StackOverflowName)
		}
		if im.Kind == KindMemory {
			return stackPlan{}, fmt.Errorf("%w: the memory is imported", ErrStackShape)
		}
	}
	if len(m.Memories) != 1 {
		return stackPlan{}, fmt.Errorf("%w: the module defines no memory", ErrStackShape)
	}
	sp, err := stackPointer(m)
	if err != nil {
		return stackPlan{}, err
	}
	g := m.Globals[sp-m.ImportedGlobals()]
	init, _ := ConstI32(g.Init)
	mem := m.Memories[0]
	bottom := uint64(mem.Min) * pageSize
	newMin := uint64(mem.Min) + uint64(size)/pageSize
	switch {
	case uint64(uint32(init)) > bottom:
		return stackPlan{}, fmt.Errorf("%w: the stack pointer starts at %d, beyond the initial memory", ErrStackShape, uint32(init))
	case newMin > 65536:
		return stackPlan{}, fmt.Errorf("%w: the initial memory and the stack exceed 4 GiB", ErrStackShape)
	case mem.HasMax && uint64(mem.Max) < newMin:
		return stackPlan{}, fmt.Errorf("%w: the memory's maximum of %d pages is below the %d it needs", ErrStackShape, mem.Max, newMin)
	}
	written := 0
	for i, b := range m.Code {
		n, err := checkShapes(b.Code, sp)
		if err != nil {
			return stackPlan{}, fmt.Errorf("%w: function %d: %w", ErrStackShape, m.ImportedFuncs()+uint32(i), err)
		}
		written += n
	}
	if written == 0 {
		return stackPlan{}, fmt.Errorf("%w: no function sets the stack pointer", ErrStackShape)
	}
	return stackPlan{
		region: StackRegion{
			Bottom: uint32(bottom),
			Top:    uint32(bottom + uint64(size)),
			Limit:  uint32(bottom) + s.Guard + StackRedZone,
		},
		sp:      sp,
		newMin:  uint32(newMin),
		written: written,
	}, nil
}

// stackPointer finds the stack pointer: the global the name section
// calls StackPointerName, which must be a defined, mutable, unexported
// i32 with a constant initial value.
func stackPointer(m *Module) (uint32, error) {
	sp, found := uint32(0), false
	for idx, name := range m.GlobalNames() {
		if name == StackPointerName {
			sp, found = idx, true
		}
	}
	if !found {
		return 0, fmt.Errorf("%w: no global named %s in the name section", ErrStackShape, StackPointerName)
	}
	imported := m.ImportedGlobals()
	if sp < imported || sp-imported >= uint32(len(m.Globals)) {
		return 0, fmt.Errorf("%w: the stack pointer (global %d) is imported or out of range", ErrStackShape, sp)
	}
	g := m.Globals[sp-imported]
	if _, ok := ConstI32(g.Init); !ok || g.Type != I32 || !g.Mutable {
		return 0, fmt.Errorf("%w: the stack pointer (global %d) is not a mutable i32 with a constant value", ErrStackShape, sp)
	}
	for _, e := range m.Exports {
		if e.Name == StackLowName {
			return 0, fmt.Errorf("%w: the module exports %s already", ErrStackShape, StackLowName)
		}
		if e.Kind == KindGlobal && e.Index == sp {
			return 0, fmt.Errorf("%w: the stack pointer is exported (as %q): the host could move it", ErrStackShape, e.Name)
		}
	}
	return sp, nil
}

// checkShapes checks every read of the stack pointer (global sp) in a
// function body against the shapes LLVM emits, and returns how many
// times the body sets it. In a function that sets the stack pointer,
// every read is
//
//   - a prologue: the value, moved down by constants, locals and i32
//     arithmetic only (alloca's alignment included), reaches a global.set
//     of the stack pointer before any store, call or branch; or
//   - a save: the value goes straight into a local, to be set back later
//     (around an alloca, at a return).
//
// A function that never sets it must be a leaf (no call): LLVM leaves
// the stack pointer in place only for a leaf whose frame fits in the red
// zone. Its frame is the value, or a local it was saved in, less a
// constant, which must be at most StackRedZone; its other uses of the
// value (QuickJS's lre_check_stack_overflow compares it to a limit)
// address nothing below it. In every function, a local that was set into
// the stack pointer must not be used less a constant (an address below
// the frame). Every other shape is refused.
func checkShapes(code []byte, sp uint32) (int, error) {
	var ins []instr
	if err := walk(code, func(in instr) error { ins = append(ins, in); return nil }); err != nil {
		return 0, err
	}
	imm := func(in instr) uint32 {
		r := &reader{b: code[in.start+1 : in.end]}
		return r.u32()
	}
	isSP := func(in instr, op byte) bool { return in.op == op && imm(in) == sp }
	sets, leaf := 0, true
	for _, in := range ins {
		switch {
		case isSP(in, opGlobalSet):
			sets++
		case in.op == opCall || in.op == opCallIndirect:
			leaf = false
		}
	}
	saved := map[uint32]bool{} // locals a leaf saved the stack pointer in
	for i, in := range ins {
		if !isSP(in, opGlobalGet) {
			continue
		}
		next := ins[i+1] // an expression ends with end: a get is never last
		save := next.op == opLocalSet || next.op == opLocalTee
		switch {
		case sets > 0 && (save || reachesSet(ins[i+1:], isSP)):
		case sets > 0:
			return 0, fmt.Errorf("a read of the stack pointer at byte %d in a shape the pass does not know", in.start)
		case !leaf:
			return 0, fmt.Errorf("a function with calls reads the stack pointer (at byte %d) but never sets it", in.start)
		case save:
			saved[imm(next)] = true
		}
		if sets == 0 && !redZoneOK(code, ins[i+1:]) {
			return 0, fmt.Errorf("a leaf function's frame below the stack pointer (at byte %d) exceeds the red zone", in.start)
		}
	}
	// A frame is addressed upwards from the value set: a local that was
	// set into the stack pointer (local.tee; global.set) less a constant
	// would address below it (none in QuickJS-NG 0.11; refused, since the
	// check could not see it).
	frame := map[uint32]bool{}
	for i := 0; i+1 < len(ins); i++ {
		if ins[i].op == opLocalTee && isSP(ins[i+1], opGlobalSet) {
			frame[imm(ins[i])] = true
		}
	}
	for i, in := range ins {
		if in.op != opLocalGet {
			continue
		}
		switch l := imm(in); {
		case saved[l] && !redZoneOK(code, ins[i+1:]):
			return 0, fmt.Errorf("a leaf function's frame below the stack pointer (at byte %d) exceeds the red zone", in.start)
		case frame[l] && i+2 < len(ins) && ins[i+1].op == opI32Const && ins[i+2].op == opI32Sub:
			return 0, fmt.Errorf("an address below the frame the stack pointer was set to (at byte %d)", in.start)
		}
	}
	return sets, nil
}

// reachesSet reports whether the instructions, up to the first global.set
// of the stack pointer, are all pure i32 arithmetic on constants and
// locals (no store, call, branch or other global).
func reachesSet(ins []instr, isSP func(instr, byte) bool) bool {
	for _, in := range ins {
		switch {
		case isSP(in, opGlobalSet):
			return true
		case in.op == opLocalGet, in.op == opLocalSet, in.op == opLocalTee, in.op == opI32Const,
			in.op >= opI32Add && in.op <= opI32Rotr:
		default:
			return false
		}
	}
	return false
}

// redZoneOK reports whether ins, which follow the stack pointer's value,
// do not start with i32.const N; i32.sub for an N outside [0,
// StackRedZone].
func redZoneOK(code []byte, ins []instr) bool {
	if len(ins) < 2 || ins[0].op != opI32Const || ins[1].op != opI32Sub {
		return true
	}
	r := &reader{b: code[ins[0].start+1 : ins[0].end]}
	n := r.sleb(32)
	return r.err == nil && n >= 0 && n <= StackRedZone
}

// Apply applies the stack pass to m, or refuses it with an error
// wrapping ErrStackShape (see Plan).
func (s Stack) Apply(m *Module) error {
	p, err := s.plan(m)
	if err != nil {
		return err
	}
	nImp := m.ImportedFuncs()
	voidType := m.addType(FuncType{})
	// The host function goes after the imported functions; every defined
	// function's index moves up by one.
	m.Imports = append(m.Imports, Import{Module: PreemptModule, Name: StackOverflowName, Kind: KindFunc, Type: voidType})
	if err := m.shiftFuncs(nImp, 1, true); err != nil {
		return err
	}
	top := append(appendS64([]byte{opI32Const}, int64(int32(p.region.Top))), opEnd)
	m.Globals[p.sp-m.ImportedGlobals()].Init = top
	m.Memories[0].Min = p.newMin
	m.memoryEdited = true

	low := m.ImportedGlobals() + uint32(len(m.Globals))
	m.Globals = append(m.Globals, Global{Type: I32, Mutable: true, Init: bytes.Clone(top)})
	m.Exports = append(m.Exports, Export{Name: StackLowName, Kind: KindGlobal, Index: low})
	check := p.region.check(p.sp, nImp, low)
	inserted := 0
	for i := range m.Code {
		b := &m.Code[i]
		var out []byte
		last := 0
		err := walk(b.Code, func(in instr) error {
			if in.op != opGlobalSet {
				return nil
			}
			if r := (&reader{b: b.Code[in.start+1 : in.end]}); r.u32() != p.sp {
				return nil
			}
			out = append(out, b.Code[last:in.end]...)
			out = append(out, check...)
			last = in.end
			inserted++
			return nil
		})
		if err != nil {
			return err
		}
		if out != nil {
			b.Code = append(out, b.Code[last:]...)
		}
	}
	if inserted != p.written {
		return fmt.Errorf("%w: %d checks inserted for %d writes of the stack pointer", ErrStackShape, inserted, p.written)
	}
	return nil
}

// check is the code the pass inserts after a global.set of the stack
// pointer (global sp): unless Limit <= sp <= Top, call the host function
// (function index call) and trap; then lower the low-water mark (global
// low) to sp. One unsigned comparison covers both ends: sp - Limit wraps
// above Top - Limit when sp is below Limit, and a stack pointer moved so
// far down that it wrapped around the address space (a huge alloca)
// lands above Top.
func (r StackRegion) check(sp, call, low uint32) []byte {
	b := appendU32([]byte{opGlobalGet}, sp)
	b = appendS64(append(b, opI32Const), int64(int32(r.Limit)))
	b = append(b, opI32Sub)
	b = appendS64(append(b, opI32Const), int64(int32(r.Top-r.Limit)))
	b = append(b, opI32GtU, opIf, blockVoid)
	b = appendU32(append(b, opCall), call)
	b = append(b, opUnreachable, opEnd)
	b = appendU32(append(b, opGlobalGet), sp)
	b = appendU32(append(b, opGlobalGet), low)
	b = append(b, opI32LtU, opIf, blockVoid)
	b = appendU32(append(b, opGlobalGet), sp)
	b = appendU32(append(b, opGlobalSet), low)
	return append(b, opEnd)
}
