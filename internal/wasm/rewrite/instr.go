package rewrite

// Opcodes the passes look at or emit.
const (
	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0b
	opBr           = 0x0c
	opBrIf         = 0x0d
	opReturn       = 0x0f
	opCall         = 0x10
	opCallIndirect = 0x11
	opLocalGet     = 0x20
	opLocalSet     = 0x21
	opLocalTee     = 0x22
	opGlobalGet    = 0x23
	opGlobalSet    = 0x24
	opI32Store     = 0x36
	opI64Store32   = 0x3e
	opMemorySize   = 0x3f
	opI32Const     = 0x41
	opI64Const     = 0x42
	opI32Eqz       = 0x45
	opI32LeS       = 0x4c
	opI32LtU       = 0x49
	opI32GtU       = 0x4b
	opI32LeU       = 0x4d
	opI64GtU       = 0x56
	opI32Add       = 0x6a
	opI32Sub       = 0x6b
	opI32ShrU      = 0x76
	opI32Rotr      = 0x78
	opI64Add       = 0x7c
	opI64Shl       = 0x86
	opI64ExtendU   = 0xad
	opRefFunc      = 0xd2
	opPrefixFC     = 0xfc

	blockVoid = 0x40

	// 0xFC sub-opcodes.
	fcMemoryInit = 8
	fcMemoryCopy = 10
	fcMemoryFill = 11
	fcTableInit  = 12
	fcTableCopy  = 14
	fcTableGrow  = 15
	fcTableFill  = 17
)

// instr is one decoded instruction of a body or constant expression.
type instr struct {
	op         byte
	sub        uint32 // the sub-opcode after the 0xFC prefix
	start, end int    // its bytes in the body
	funcIdx    uint32 // the function index of call and ref.func
	funcAt     int    // where that index starts (so it can be rewritten)
}

// walk decodes the instructions of code (a function body's expression or
// a constant expression, with its final end) and calls fn for each, in
// order. It fails on an opcode it does not know, so that no instruction
// is ever passed over unseen.
func walk(code []byte, fn func(in instr) error) error {
	_, err := walkPrefix(code, false, fn)
	return err
}

// walkPrefix is walk over the expression at the start of code; with
// trailing, bytes after its final end are allowed. It returns the
// expression's length.
func walkPrefix(code []byte, trailing bool, fn func(in instr) error) (int, error) {
	r := &reader{b: code}
	depth := 0
	for {
		if r.done() {
			if r.err != nil {
				return 0, r.err
			}
			r.fail("expression without end")
			return 0, r.err
		}
		in := instr{start: r.off}
		in.op = r.byte()
		switch op := in.op; {
		case op == opUnreachable, op == 0x01, op == opElse, op == opReturn, op == 0x1a, op == 0x1b,
			op >= opI32Eqz && op <= 0xc4, op == 0xd1:
			// no immediate
		case op == opBlock, op == opLoop, op == opIf:
			blockType(r)
			depth++
		case op == opEnd:
			depth--
		case op == opBr, op == opBrIf:
			r.u32()
		case op == 0x0e: // br_table
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.u32()
			}
			r.u32()
		case op == opCall, op == opRefFunc:
			in.funcAt = r.off
			in.funcIdx = r.u32()
		case op == 0x11: // call_indirect
			r.u32()
			r.u32()
		case op == 0x1c: // select t*
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				valType(r)
			}
		case op >= opLocalGet && op <= 0x26: // locals, globals, table.get/set
			r.u32()
		case op >= 0x28 && op <= 0x3e: // loads and stores
			if align := r.u32(); align&0x40 != 0 {
				r.unsupported("multiple memories")
			}
			r.u32()
		case op == opMemorySize, op == 0x40:
			if r.byte() != 0 {
				r.unsupported("multiple memories")
			}
		case op == opI32Const:
			r.sleb(32)
		case op == opI64Const:
			r.sleb(64)
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op == 0xd0: // ref.null t
			refType(r)
		case op == opPrefixFC:
			in.sub = r.u32()
			prefixFC(r, in.sub)
		case op == 0xfd:
			r.unsupported("SIMD instructions")
		case op == 0xfe:
			r.unsupported("threads (atomic instructions)")
		case op == 0x12, op == 0x13:
			r.unsupported("tail calls")
		case op >= 0x06 && op <= 0x0a, op == 0x18, op == 0x19, op == 0x1f:
			r.unsupported("exception handling")
		default:
			r.unsupported("opcode 0x%02x", op)
		}
		if r.err != nil {
			return 0, r.err
		}
		in.end = r.off
		if err := fn(in); err != nil {
			return 0, err
		}
		if depth < 0 {
			if len(r.b) != 0 && !trailing {
				r.fail("bytes after the final end")
				return 0, r.err
			}
			return r.off, nil
		}
	}
}

// prefixFC reads the immediates of a 0xFC instruction.
func prefixFC(r *reader, sub uint32) {
	switch {
	case sub <= 7: // saturating truncations
	case sub == fcMemoryInit:
		r.u32()
		memZero(r)
	case sub == 9: // data.drop
		r.u32()
	case sub == fcMemoryCopy:
		memZero(r)
		memZero(r)
	case sub == fcMemoryFill:
		memZero(r)
	case sub == fcTableInit, sub == fcTableCopy:
		r.u32()
		r.u32()
	case sub == 13, sub == fcTableGrow, sub == 16, sub == fcTableFill: // elem.drop, table.grow/size/fill
		r.u32()
	default:
		r.unsupported("0xfc instruction %d", sub)
	}
}

func memZero(r *reader) {
	if r.byte() != 0 {
		r.unsupported("multiple memories")
	}
}

// blockType reads a block type: empty, one value type, or a type index.
func blockType(r *reader) {
	if len(r.b) > 0 && (r.b[0] == blockVoid || isValType(r.b[0])) {
		r.byte()
		return
	}
	if r.sleb(33) < 0 {
		r.fail("block type")
	}
}

func isValType(c byte) bool {
	switch c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

func valType(r *reader) byte {
	c := r.byte()
	if r.err == nil && !isValType(c) {
		r.unsupported("value type 0x%02x", c)
	}
	return c
}

func refType(r *reader) byte {
	c := r.byte()
	if r.err == nil && c != 0x70 && c != 0x6f {
		r.unsupported("reference type 0x%02x", c)
	}
	return c
}
