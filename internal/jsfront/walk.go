package jsfront

import (
	"reflect"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
)

// astPkg is the import path of goja's AST package: the walker follows
// only pointers to its node types.
var astPkg = reflect.TypeOf(ast.Program{}).PkgPath()

// walk visits every node of goja's syntax tree under root (a node, or a
// slice of them), each before its children and in the order of the
// source; visit returns whether to walk the node's children. The walk is
// iterative, so its Go stack stays flat however deep the tree is. It is
// the one walk of the tree in this package.
func walk(root any, visit func(ast.Node) bool) {
	stack := []reflect.Value{reflect.ValueOf(root)}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for v.Kind() == reflect.Interface {
			if v.IsNil() {
				break
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Slice:
			for i := v.Len() - 1; i >= 0; i-- {
				stack = append(stack, v.Index(i))
			}
			continue
		case reflect.Pointer:
			if v.IsNil() || v.Type().Elem().PkgPath() != astPkg || v.Type().Elem().Kind() != reflect.Struct {
				continue
			}
		default:
			continue
		}
		if n, ok := v.Interface().(ast.Node); ok && !visit(n) {
			continue
		}
		s := v.Elem()
		t := s.Type()
		for i := s.NumField() - 1; i >= 0; i-- {
			if t.Field(i).Name == "DeclarationList" {
				continue // pointers into the tree, already walked
			}
			switch fv := s.Field(i); fv.Kind() {
			case reflect.Interface, reflect.Pointer, reflect.Slice:
				stack = append(stack, fv)
			}
		}
	}
}

// topFacts is what the top level of a script does, outside every nested
// function.
type topFacts struct {
	await bool // an await expression, or a for-await loop
	ret   bool // a return statement
}

// scanTop walks stmts, and every node under them that runs as part of the
// top level: it does not enter a function, an arrow function, a class's
// static block or a field's initializer, each of which has its own await
// scope. forAwait holds the offsets (in the script) of the for keywords
// whose await was masked.
func scanTop(stmts []ast.Statement, forAwait map[int]bool) topFacts {
	var f topFacts
	var visit func(ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral, *ast.ClassStaticBlock:
			return false
		case *ast.FieldDefinition:
			walk(n.Key, visit) // a computed key runs at the top level
			return false
		case *ast.AwaitExpression:
			f.await = true
		case *ast.ReturnStatement:
			f.ret = true
		case *ast.ForOfStatement:
			if forAwait[offset(n.For)] {
				f.await = true
			}
		}
		return true
	}
	walk(stmts, visit)
	return f
}

// end returns the offset (in the script) just past the last token of n.
// goja's Idx1 is not always there: a new expression with an empty
// argument list ends, for Idx1, after its callee, before "()"; a postfix
// ++ or -- after white space ends, for Idx1, inside the operator. end is
// the furthest any node under n reaches: its Idx1, the closing bracket,
// brace, parenthesis or quote it records, the end of a postfix operator.
func end(n ast.Node) int {
	last := offset(n.Idx1())
	walk(n, func(m ast.Node) bool {
		last = max(last, offset(m.Idx1()))
		if u, ok := m.(*ast.UnaryExpression); ok && u.Postfix {
			last = max(last, offset(u.Idx)+2) // ++ or --
		}
		s := reflect.ValueOf(m).Elem()
		for _, name := range closers {
			if f := s.FieldByName(name); f.IsValid() && f.Type() == idxType && f.Int() > 0 {
				last = max(last, offset(file.Idx(f.Int()))+1)
			}
		}
		return true
	})
	return last
}

// closers are the fields of goja's nodes that record a closing token.
var closers = []string{"RightParenthesis", "RightBracket", "RightBrace", "CloseQuote", "Closing", "Semicolon"}

var idxType = reflect.TypeOf(file.Idx(0))

// offset converts a parser index of the wrapped source into an offset in
// the script.
func offset(i file.Idx) int { return int(i) - 1 - len(Prefix) }
