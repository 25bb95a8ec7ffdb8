package registry_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneWayToRegister pins the package's shape: a program owns its
// Registry, and the package holds no registry of its own. The only
// package-level functions are constructors, and the only package-level
// variables are error sentinels.
func TestOneWayToRegister(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	pkg, ok := pkgs["registry"]
	require.True(t, ok)
	for name, file := range pkg.Files {
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					assert.Equal(t, "New", d.Name.Name, "%s: package-level function %s: operate on a *Registry instead", name, d.Name.Name)
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						assert.True(t, !id.IsExported() || strings.HasPrefix(id.Name, "Err"), "%s: exported variable %s", name, id.Name)
						assert.True(t, id.IsExported() || id.Name == "_", "%s: package-level variable %s: a registry's state belongs to a *Registry", name, id.Name)
					}
				}
			}
		}
	}
}
