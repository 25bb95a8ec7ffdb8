package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProductionDoorsLinkNoKit guards the seam between audiences: a
// program serving Sandbank (the HTTP server, the MCP server, the tenants
// they admit, the kit's report they list) links neither package testing,
// net/http/httptest, nor the conformance kit and its hostile fixtures.
// The kit reaches the server only as Options.Verify, wired by the
// program. The sandbank binary runs the kit (its matrix command) and so
// links it, but still no package testing nor httptest: the kit's runner
// for tests is package conformancetest.
func TestProductionDoorsLinkNoKit(t *testing.T) {
	goBin := goTool(t)
	const module = "github.com/sandbank/sandbank/"
	for _, tc := range []struct {
		pkg      string
		linksKit bool
	}{{"server", false}, {"mcpserver", false}, {"tenant", false}, {"conformance/verdict", false}, {"cmd/sandbank", true}} {
		pkg := tc.pkg
		t.Run(pkg, func(t *testing.T) {
			cmd := exec.Command(goBin, "list", "-deps", module+pkg)
			out, err := cmd.Output()
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			require.NoError(t, err, "go list -deps %s: %s", pkg, stderr)
			for _, dep := range strings.Fields(string(out)) {
				kit := dep == module+"conformance" ||
					dep == module+"fixtures" || strings.HasPrefix(dep, module+"fixtures/")
				assert.False(t, dep == "testing" || strings.HasPrefix(dep, "testing/") ||
					dep == "net/http/httptest" || (kit && !tc.linksKit),
					"%s links %s", pkg, dep)
			}
		})
	}
}

// goTool returns the go command, or skips the test without one.
func goTool(t *testing.T) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go tool to list the packages' dependencies")
		}
	}
	return goBin
}

// layers are the module's import layers, lowest first (docs/design.md,
// "The layers"): a package imports only packages of its own layer or of
// one below. A package is in the layer of the longest prefix that names
// it; one that no prefix names fails TestLayering until it is placed. An
// arrow that would run upward runs through an interface the lower package
// owns instead: effect signs through record's Signer, which receipt's
// Ed25519Signer implements; the server verifies the kit's report through
// Options.Verify, which the program wires.
var layers = []struct {
	name     string
	packages []string
}{
	{"the engine interface", []string{"spi"}},
	{"helpers and data", []string{"internal/", "fixtures", "conformance/verdict"}},
	{"engines", []string{"backends/"}},
	{"the run's data", []string{"record"}},
	{"the run", []string{"effect"}},
	{"receipts", []string{"receipt"}},
	{"products", []string{"registry", "pool", "tenant", "storage", "codemode", "durable"}},
	{"kits and clients", []string{"conformance", "builtin", "client", "internal/doortest", "internal/hostbench"}},
	{"doors", []string{"server", "mcpserver"}},
	{"programs", []string{"cmd/", "bench/", "internal/apicount", ""}},
}

// layerOf returns the layer of the module package rel (its path inside
// the module; "" for the root), or -1.
func layerOf(rel string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.packages {
			match := rel == p || strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p) ||
				p != "" && strings.HasPrefix(rel, p+"/")
			if (match || p == "" && rel == "") && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

// TestLayering: no package of the module imports a package of a layer
// above its own (layers), so effect never imports receipt, a backend never
// imports effect, and nothing below the doors imports a door. It reads
// the imports of the module's non-test files with go list.
func TestLayering(t *testing.T) {
	goBin := goTool(t)
	const module = "github.com/sandbank/sandbank"
	cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "go list: %s", stderr)
	rel := func(path string) (string, bool) {
		if path == module {
			return "", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.NotEmpty(t, lines)
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, _ := rel(fields[0])
		from := layerOf(pkg)
		if !assert.GreaterOrEqual(t, from, 0, "package %q is in no layer: place it in layers", pkg) {
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := rel(imp)
			if !ok {
				continue
			}
			to := layerOf(dep)
			assert.True(t, to >= 0 && to <= from, "%s (%s) imports %s (%s), a layer above it",
				pkg, layers[from].name, dep, layerName(to))
		}
	}
}

// layerName names layer i, or says it is none.
func layerName(i int) string {
	if i < 0 {
		return "no layer"
	}
	return layers[i].name
}

// TestPublicAPINamesNoInternalType: no exported declaration of the
// module's public packages (an option's field, a function's signature, a
// type) names a type of an internal package, which a caller could not
// spell. It reads the sources of the module (this package's parent), its
// Temporal module included.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	var found []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "internal" || n == "testdata" || (strings.HasPrefix(n, ".") && n != "..") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found = append(found, internalNames(t, path)...)
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, found, "exported declarations that name an internal package's type")
}

// internalNames returns where the exported declarations of the Go file
// at path name a type of an internal package it imports.
func internalNames(t *testing.T, path string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	internal := map[string]string{} // local name -> import path
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if !strings.Contains(p+"/", "/internal/") {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		internal[name] = p
	}
	var found []string
	check := func(n ast.Node, decl string) {
		ast.Inspect(n, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := s.X.(*ast.Ident); ok && internal[x.Name] != "" {
					found = append(found, fset.Position(s.Pos()).String()+": "+decl+" names "+internal[x.Name]+"."+s.Sel.Name)
				}
			}
			return true
		})
	}
	if len(internal) == 0 {
		return nil
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || exportedReceiver(d.Recv)) {
				check(d.Type, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					st, ok := s.Type.(*ast.StructType)
					if !ok {
						check(s.Type, s.Name.Name)
						continue
					}
					for _, field := range st.Fields.List {
						exported := len(field.Names) == 0 // embedded
						for _, n := range field.Names {
							exported = exported || n.IsExported()
						}
						if exported {
							check(field.Type, s.Name.Name)
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Type != nil {
							check(s.Type, n.Name)
						}
					}
				}
			}
		}
	}
	return found
}

// exportedReceiver reports whether a method's receiver type is exported.
func exportedReceiver(recv *ast.FieldList) bool {
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if index, ok := typ.(*ast.IndexExpr); ok {
		typ = index.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
