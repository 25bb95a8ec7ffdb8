package rewrite

// The helpers that replace memory.fill and memory.copy: both take
// (destination, value or source, count). A count up to BulkChunk is
// charged and done at once; a larger one is first checked against the
// memory's size (an operation out of bounds runs unchanged, so it traps
// as it would have, before writing a byte), then done a chunk at a time,
// each chunk charged first, so that the host is visited between chunks.

// Locals of the helpers: the three parameters.
const (
	argDst = 0
	argSrc = 1 // the fill value, for the fill helper
	argN   = 2
)

// op appends the bytes of one instruction with an unsigned immediate.
func op(out []byte, code byte, imm uint32) []byte { return appendU32(append(out, code), imm) }

func i32c(out []byte, v int64) []byte { return appendS64(append(out, opI32Const), v) }

// bulkOp appends memory.fill or memory.copy of the operands d, s and n.
func bulkOp(out []byte, copy bool, d, s []byte, n []byte) []byte {
	out = append(out, d...)
	out = append(out, s...)
	out = append(out, n...)
	if copy {
		return append(out, opPrefixFC, fcMemoryCopy, 0, 0)
	}
	return append(out, opPrefixFC, fcMemoryFill, 0)
}

func get(l uint32) []byte { return op(nil, opLocalGet, l) }

// plus is local l + k.
func plus(l uint32, k []byte) []byte {
	out := get(l)
	out = append(out, k...)
	return append(out, opI32Add)
}

// outOfBounds appends: local l + n > memory size in bytes (as i64).
func outOfBounds(out []byte, l uint32) []byte {
	out = op(out, opLocalGet, l)
	out = append(out, opI64ExtendU)
	out = op(out, opLocalGet, argN)
	out = append(out, opI64ExtendU, opI64Add)
	out = append(out, opMemorySize, 0, opI64ExtendU)
	out = append(out, opI64Const, 16, opI64Shl, opI64GtU)
	return out
}

// small appends the case of a count up to BulkChunk, and the bounds
// check of a larger one: both end the function.
func (p *preempter) small(out []byte, copy bool) []byte {
	whole := bulkOp(nil, copy, get(argDst), get(argSrc), get(argN))
	out = op(out, opLocalGet, argN)
	out = i32c(out, BulkChunk)
	out = append(out, opI32LeU, opIf, blockVoid)
	out = p.chargeLocal(out, argN)
	out = append(out, whole...)
	out = append(out, opReturn, opEnd)
	out = outOfBounds(out, argDst)
	if copy {
		out = outOfBounds(out, argSrc)
		out = append(out, 0x72) // i32.or of the two i32 results
	}
	out = append(out, opIf, blockVoid)
	out = append(out, whole...) // traps
	return append(out, opReturn, opEnd)
}

var chunk = i32c(nil, BulkChunk)

// forward appends a loop that does the operation a chunk at a time from
// the start while more than a chunk is left, then the rest.
func (p *preempter) forward(out []byte, copy bool) []byte {
	out = append(out, opLoop, blockVoid)
	out = p.charge(out, BulkChunk>>10)
	out = bulkOp(out, copy, get(argDst), get(argSrc), chunk)
	out = append(out, plus(argDst, chunk)...)
	out = op(out, opLocalSet, argDst)
	if copy {
		out = append(out, plus(argSrc, chunk)...)
		out = op(out, opLocalSet, argSrc)
	}
	out = op(out, opLocalGet, argN)
	out = append(out, chunk...)
	out = append(out, opI32Sub)
	out = op(out, opLocalTee, argN)
	out = append(out, chunk...)
	out = append(out, opI32GtU)
	out = op(out, opBrIf, 0)
	out = append(out, opEnd)
	out = p.chargeLocal(out, argN)
	return bulkOp(out, copy, get(argDst), get(argSrc), get(argN))
}

// fillHelper is the body of the memory.fill helper.
func (p *preempter) fillHelper() []byte {
	out := p.small(nil, false)
	out = p.forward(out, false)
	return append(out, opEnd)
}

// copyHelper is the body of the memory.copy helper: forward when the
// destination lies below the source, backward (the last chunk first)
// otherwise, so that overlapping ranges copy as memory.copy does.
func (p *preempter) copyHelper() []byte {
	out := p.small(nil, true)
	out = op(out, opLocalGet, argDst)
	out = op(out, opLocalGet, argSrc)
	out = append(out, opI32LeU, opIf, blockVoid)
	out = p.forward(out, true)
	out = append(out, opReturn, opEnd)
	// Backward.
	out = append(out, opLoop, blockVoid)
	out = op(out, opLocalGet, argN)
	out = append(out, chunk...)
	out = append(out, opI32Sub)
	out = op(out, opLocalSet, argN)
	out = p.charge(out, BulkChunk>>10)
	out = bulkOp(out, true, plus(argDst, get(argN)), plus(argSrc, get(argN)), chunk)
	out = op(out, opLocalGet, argN)
	out = append(out, chunk...)
	out = append(out, opI32GtU)
	out = op(out, opBrIf, 0)
	out = append(out, opEnd)
	out = p.chargeLocal(out, argN)
	out = bulkOp(out, true, get(argDst), get(argSrc), get(argN))
	return append(out, opEnd)
}
