package rewrite

// What readers of a module (not the passes) ask of it.

// ConstI32 reports the value of a constant expression of the form
// i32.const N; end, or false for any other expression.
func ConstI32(expr []byte) (int32, bool) {
	if len(expr) < 3 || expr[0] != opI32Const || expr[len(expr)-1] != opEnd {
		return 0, false
	}
	r := &reader{b: expr[1 : len(expr)-1]}
	v := r.sleb(32)
	if r.err != nil || len(r.b) != 0 {
		return 0, false
	}
	return int32(v), true
}

// GlobalNames returns the global names of the name section (subsection
// 7) by global index; empty without them.
func (m *Module) GlobalNames() map[uint32]string {
	out := map[uint32]string{}
	if m.Names == nil {
		return out
	}
	for _, s := range m.Names.Subsections {
		if s.ID != 7 {
			continue
		}
		r := &reader{b: s.Raw}
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			idx, name := r.u32(), r.name()
			if r.err == nil {
				out[idx] = name
			}
		}
	}
	return out
}
