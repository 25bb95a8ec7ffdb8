package sandbank_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandbank/sandbank/internal/fenced"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeExamples are the files whose Example functions README's Go blocks
// are: go test runs an Example with an output comment, and compiles one
// without (the Temporal worker, which needs a server).
var readmeExamples = []string{"example_test.go", filepath.Join("temporal", "example_test.go")}

// TestReadmeGoBlocks: every ```go block of README.md is, word for word,
// the body of an Example function, so that what a reader pastes is what
// the tests compile, and run when the Example has an output comment. A
// block whose Example is only compiled says so.
func TestReadmeGoBlocks(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := fenced.Blocks(string(readme), "go")
	require.NotEmpty(t, blocks, "README has no Go block")

	type example struct {
		name string
		runs bool
	}
	bodies := map[string]example{}
	for _, file := range readmeExamples {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
				continue
			}
			body := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
			body, runs := exampleBody(body)
			bodies[body] = example{name: file + ": " + fn.Name.Name, runs: runs}
		}
	}
	for i, b := range blocks {
		ex, ok := bodies[b]
		if !assert.True(t, ok, "README's Go block %d is the body of no Example function in %v:\n%s", i+1, readmeExamples, b) {
			continue
		}
		if !ex.runs {
			assert.Contains(t, b, "it does not run it", "README's Go block %d (%s) is only compiled: the block must say so", i+1, ex.name)
		}
	}
}

// exampleBody returns an Example function's body as README shows it: one
// tab of indentation less, without its output comment, and whether it
// has one (go test runs it then).
func exampleBody(body string) (string, bool) {
	lines := strings.Split(strings.Trim(body, "\n"), "\n")
	runs := false
	for i, l := range lines {
		l = strings.TrimPrefix(l, "\t")
		if strings.HasPrefix(l, "// Output:") || strings.HasPrefix(l, "// Unordered output:") {
			lines, runs = lines[:i], true
			break
		}
		lines[i] = l
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n"), runs
}
