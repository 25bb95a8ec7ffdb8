package jsfront

import (
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// A site is where the completion assignment goes: before the expression
// whose value is the script's completion value when it runs last. lo and
// hi are the expression's offsets as goja's parser reports them (without
// the parentheses around it); verify checks them.
type site struct{ at, lo, hi int }

// sites collects the completion sites of a statement list.
type sites struct {
	src  []byte
	list []site
	ok   bool
}

// completionSites returns the sites of the top-level statements, in order
// of offset, or false when one could not be placed exactly.
//
// The completion value is what the script's completion value would be,
// for the statements whose value is easy to follow: the last statement
// that is not a declaration (var, let, const, function, class) or an empty
// statement decides; an expression statement gives its value; a block,
// the branches of an if, the try block and the catch block of a try give
// their own completion value by the same rule. Anything else (a loop, a
// switch, a labelled statement, ...) gives undefined.
func completionSites(src []byte, stmts []ast.Statement) ([]site, bool) {
	s := &sites{src: src, ok: true}
	s.statements(stmts, 0)
	if !s.ok {
		return nil, false
	}
	return s.list, true
}

// statements places the site of a statement list whose first statement
// starts at or after lower.
func (s *sites) statements(list []ast.Statement, lower int) {
	k := len(list) - 1
	for k >= 0 && emptyCompletion(list[k]) {
		k--
	}
	if k < 0 {
		return
	}
	if k > 0 {
		lower = end(list[k-1])
	}
	s.statement(list[k], lower)
}

// emptyCompletion reports whether a statement leaves the completion value
// of the statements before it in place.
func emptyCompletion(st ast.Statement) bool {
	switch st.(type) {
	case *ast.VariableStatement, *ast.LexicalDeclaration, *ast.FunctionDeclaration,
		*ast.ClassDeclaration, *ast.EmptyStatement, *ast.DebuggerStatement:
		return true
	}
	return false
}

// statement places the sites of one statement that starts at or after
// lower.
func (s *sites) statement(st ast.Statement, lower int) {
	switch n := st.(type) {
	case *ast.ExpressionStatement:
		e := n.Expression
		if seq, ok := e.(*ast.SequenceExpression); ok && len(seq.Sequence) > 1 {
			// a, b: the value is b's, and the assignment binds tighter
			// than the comma.
			lower = end(seq.Sequence[len(seq.Sequence)-2])
			e = seq.Sequence[len(seq.Sequence)-1]
		}
		lo, hi := offset(e.Idx0()), offset(e.Idx1())
		at, ok := s.start(lower, lo)
		if !ok {
			s.ok = false
			return
		}
		s.list = append(s.list, site{at: at, lo: lo, hi: hi})
	case *ast.BlockStatement:
		s.statements(n.List, offset(n.LeftBrace)+1)
	case *ast.IfStatement:
		s.statement(n.Consequent, end(n.Test))
		if n.Alternate != nil {
			s.statement(n.Alternate, end(n.Consequent))
		}
	case *ast.TryStatement:
		s.statements(n.Body.List, offset(n.Body.LeftBrace)+1)
		if n.Catch != nil {
			s.statements(n.Catch.Body.List, offset(n.Catch.Body.LeftBrace)+1)
		}
	}
}

// start returns where an expression that goja's parser places at lo
// really begins, its opening parentheses included. Between the end of what
// comes before (lower) and that beginning there are only closing
// parentheses, semicolons, commas, the keyword else, white space and
// comments; between the beginning and lo only opening parentheses, white
// space and comments. Anything else means an offset was not what this
// code expects, and the site is not placed.
func (s *sites) start(lower, lo int) (int, bool) {
	src := s.src
	if lower < 0 || lo > len(src) || lower > lo {
		return 0, false
	}
	i := lower
	for i < lo {
		if j := skipSpace(src, i); j > i {
			i = j
			continue
		}
		switch c := src[i]; {
		case c == ')' || c == ';' || c == ',':
			i++
			continue
		case c == 'e' && isKeyword(src, i, "else"):
			i += len("else")
			continue
		}
		break
	}
	at := i
	for i < lo {
		if j := skipSpace(src, i); j > i {
			i = j
			continue
		}
		if src[i] != '(' {
			return 0, false
		}
		i++
	}
	return at, i == lo
}

// isKeyword reports whether word starts at src[i] and is not part of a
// longer name.
func isKeyword(src []byte, i int, word string) bool {
	if len(src)-i < len(word) || string(src[i:i+len(word)]) != word {
		return false
	}
	if j := i + len(word); j < len(src) {
		r, _ := utf8.DecodeRune(src[j:])
		if r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// skipSpace returns the offset after the white space, line terminators
// and comments that start at src[i] (i itself when there are none).
func skipSpace(src []byte, i int) int {
	for i < len(src) {
		c := src[i]
		switch {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			i += 2
			for i < len(src) {
				r, size := utf8.DecodeRune(src[i:])
				if r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' {
					break
				}
				i += size
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := indexFrom(src, i+2, "*/")
			if end < 0 {
				return len(src)
			}
			i = end + 2
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == '\t' || r == '\v' || r == '\f' || r == ' ' || r == '\u00a0' || r == '\ufeff' ||
				r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Zs, r) {
				i += size
				continue
			}
			return i
		}
	}
	return i
}

func indexFrom(src []byte, from int, sub string) int {
	for i := from; i+len(sub) <= len(src); i++ {
		if string(src[i:i+len(sub)]) == sub {
			return i
		}
	}
	return -1
}

// verify parses the wrapped source and checks that it holds one
// completion assignment per site, each assigning exactly the expression
// the site was placed for.
func verify(wrapped []byte, want []site) bool {
	prog, err := parse(string(wrapped))
	if err != nil {
		return false
	}
	es, ok := prog.Body[0].(*ast.ExpressionStatement)
	if !ok || len(prog.Body) != 1 {
		return false
	}
	call, ok := es.Expression.(*ast.CallExpression)
	if !ok {
		return false
	}
	fn, ok := call.Callee.(*ast.ArrowFunctionLiteral)
	if !ok {
		return false
	}
	body, ok := fn.Body.(*ast.BlockStatement)
	if !ok {
		return false
	}
	got := assignments(body.List)
	if len(got) != len(want) {
		return false
	}
	for i, w := range want {
		shift := (i + 1) * len(assign) // offset() already removes Prefix
		if got[i].lo != w.lo+shift || got[i].hi != w.hi+shift {
			return false
		}
	}
	return true
}

// assignments returns, in order of offset, the ranges of the right-hand
// sides of the completion assignments among the top-level statements.
func assignments(stmts []ast.Statement) []site {
	var out []site
	var visit func(st ast.Statement)
	visit = func(st ast.Statement) {
		switch n := st.(type) {
		case *ast.ExpressionStatement:
			e := n.Expression
			if seq, ok := e.(*ast.SequenceExpression); ok {
				e = seq.Sequence[len(seq.Sequence)-1]
			}
			if a, ok := e.(*ast.AssignExpression); ok && a.Operator == token.ASSIGN {
				if id, ok := a.Left.(*ast.Identifier); ok && id.Name == completionName {
					out = append(out, site{lo: offset(a.Right.Idx0()), hi: offset(a.Right.Idx1())})
				}
			}
		case *ast.BlockStatement:
			for _, s := range n.List {
				visit(s)
			}
		case *ast.IfStatement:
			visit(n.Consequent)
			if n.Alternate != nil {
				visit(n.Alternate)
			}
		case *ast.TryStatement:
			visit(n.Body)
			if n.Catch != nil {
				visit(n.Catch.Body)
			}
		}
	}
	for _, s := range stmts {
		visit(s)
	}
	return out
}
