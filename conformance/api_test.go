package conformance

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

// TestKitExportsNoTuningConstants: the kit's timings, sizes and counts
// are its own (a report's figures carry each bound they were held to), so
// the package exports no constant or variable but the verdicts it names
// from package verdict.
func TestKitExportsNoTuningConstants(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	require.Contains(t, pkgs, "conformance")
	allowed := map[string]bool{"StatusPass": true, "StatusFail": true, "StatusSkip": true}
	var exported []string
	for name, f := range pkgs["conformance"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			for _, spec := range g.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					if id.IsExported() && !allowed[id.Name] {
						exported = append(exported, name+": "+id.Name)
					}
				}
			}
		}
	}
	assert.Empty(t, exported, "exported constants or variables of the kit")
}
