// Command apicount prints the exported identifiers that go doc lists for
// a package: its exported constants, variables, functions and types, and
// the exported methods of its types (struct fields are not counted), one
// a line, then their number.
//
//	go run ./internal/apicount ./effect
//
// The issue that split effect (#42) set its bound: at most 90.
package main

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: apicount DIR")
		os.Exit(2)
	}
	names, err := exported(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(1)
	}
	for _, n := range names {
		fmt.Println(n)
	}
	fmt.Println(len(names))
}

// exported returns, sorted, the exported identifiers go doc lists for the
// package in dir (the files the build context selects, tests left out): constants, variables, functions and
// types, and methods as Type.Method.
func exported(dir string) ([]string, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "p")
	if err != nil {
		return nil, err
	}
	var names []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					names = append(names, n)
				}
			}
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		names = append(names, f.Name)
	}
	for _, t := range p.Types {
		names = append(names, t.Name)
		values(t.Consts)
		values(t.Vars)
		for _, f := range t.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range t.Methods {
			names = append(names, t.Name+"."+m.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}
