package jsfront

import (
	"reflect"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
)

// topFacts is what the top level of a script does, outside every nested
// function.
type topFacts struct {
	await bool // an await expression, or a for-await loop
	ret   bool // a return statement
}

// astPkg is the import path of goja's AST package: the walker follows
// only pointers to its node types.
var astPkg = reflect.TypeOf(ast.Program{}).PkgPath()

// scanTop walks stmts, and every node under them that runs as part of the
// top level: it does not enter a function, an arrow function, a class's
// static block or a field's initializer, each of which has its own await
// scope. forAwait holds the offsets (in the script) of the for keywords
// whose await was masked.
//
// The walk is iterative, so its Go stack stays flat however deep the
// syntax tree is.
func scanTop(stmts []ast.Statement, forAwait map[int]bool) topFacts {
	var f topFacts
	stack := make([]reflect.Value, 0, len(stmts))
	for i := len(stmts) - 1; i >= 0; i-- {
		stack = append(stack, reflect.ValueOf(stmts[i]))
	}
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
		switch n := v.Interface().(type) {
		case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral, *ast.ClassStaticBlock:
			continue
		case *ast.FieldDefinition:
			stack = append(stack, reflect.ValueOf(n.Key))
			continue
		case *ast.AwaitExpression:
			f.await = true
		case *ast.ReturnStatement:
			f.ret = true
		case *ast.ForOfStatement:
			if forAwait[offset(n.For)] {
				f.await = true
			}
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
	return f
}

// offset converts a parser index of the wrapped source into an offset in
// the script.
func offset(i file.Idx) int { return int(i) - 1 - len(Prefix) }
