package rewrite

import "fmt"

// Function references: rewriting every use of a function index, for the
// passes that add functions (and so shift the indices after them) or
// redirect calls of one function to another.

// redirectFuncs replaces every use of a function index i by to(i): calls
// and ref.func in bodies (when bodies is set), global initialisers and element expressions,
// element segments' function lists, exports and the start function. The
// name section is left alone: the functions keep their indices.
func redirectFuncs(m *Module, to func(uint32) uint32, bodies bool) error {
	for i := range m.Code {
		if !bodies {
			break
		}
		code, err := rewriteFuncRefs(m.Code[i].Code, to)
		if err != nil {
			return fmt.Errorf("function body %d: %w", i, err)
		}
		m.Code[i].Code = code
	}
	for i := range m.Globals {
		code, err := rewriteFuncRefs(m.Globals[i].Init, to)
		if err != nil {
			return err
		}
		m.Globals[i].Init = code
	}
	for i := range m.Exports {
		if m.Exports[i].Kind == KindFunc {
			m.Exports[i].Index = to(m.Exports[i].Index)
		}
	}
	if m.Start != nil {
		s := to(*m.Start)
		m.Start = &s
	}
	for i := range m.Elements {
		e := &m.Elements[i]
		for k := range e.Funcs {
			e.Funcs[k] = to(e.Funcs[k])
		}
		for k := range e.Exprs {
			code, err := rewriteFuncRefs(e.Exprs[k], to)
			if err != nil {
				return err
			}
			e.Exprs[k] = code
		}
	}
	return nil
}

// rewriteFuncRefs rewrites the function index of every call and ref.func
// in code; every other byte stays as it was.
func rewriteFuncRefs(code []byte, shift func(uint32) uint32) ([]byte, error) {
	var out []byte
	last := 0
	err := walk(code, func(in instr) error {
		if in.op != opCall && in.op != opRefFunc {
			return nil
		}
		if to := shift(in.funcIdx); to != in.funcIdx {
			out = append(out, code[last:in.start]...)
			out = appendU32(append(out, in.op), to)
			last = in.end
		}
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
