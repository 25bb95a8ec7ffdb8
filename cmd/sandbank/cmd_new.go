package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.tmpl"))

// scaffoldFiles maps each generated file to its template.
var scaffoldFiles = []struct{ file, tmpl string }{
	{"backend.go", "backend.go.tmpl"},
	{"backend_test.go", "backend_test.go.tmpl"},
	{"doc.go", "doc.go.tmpl"},
	{"README.md", "README.md.tmpl"},
}

// scaffold is the data the templates see.
type scaffold struct {
	Name     string
	Language string
	// DefaultFixtures: the kit has a default set for Language, so the test
	// passes nil fixtures.
	DefaultFixtures bool
	// FixturesImport and FixturesAlias wire a fixture set that Sandbank
	// ships for Language; empty when it ships none (or the kit's default
	// covers it).
	FixturesImport, FixturesAlias string
}

var (
	packageName  = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	languageName = regexp.MustCompile(`^[a-z][a-z0-9_+-]*$`)
)

// validatePackageName accepts a lower-case Go identifier that is not a
// keyword, not "main" and not a predeclared name a package would shadow.
func validatePackageName(name string) error {
	switch {
	case name == "":
		return errors.New("backend name is empty")
	case token.IsKeyword(name):
		return fmt.Errorf("backend name %s is a Go keyword", quote(name))
	case !packageName.MatchString(name) || !token.IsIdentifier(name):
		return fmt.Errorf("backend name %s is not a Go package name (lower-case letters and digits, starting with a letter)", quote(name))
	case name == "main":
		return errors.New(`backend name "main" would make a command, not a package`)
	}
	return nil
}

func (a *app) newCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "new",
		Short:   "Scaffold new code (see 'sandbank new backend')",
		Long:    `new scaffolds new code. Its one subcommand is 'backend'.`,
		Example: `  sandbank new backend mybox --language javascript`,
		Args:    cobra.NoArgs,
	}
	var language, dir string
	backend := &cobra.Command{
		Use:   "backend NAME --language LANG [--dir DIR]",
		Short: "Scaffold a backend package wired to the conformance kit",
		Long: `backend writes a new backend package NAME into DIR (default ./NAME), which
must not exist yet:

  backend.go       a Backend whose capabilities are the most conservative
                   honest claims (Network open, WallClock soft, Memory false,
                   CPU false, FreshPerRun false) and whose Evaluate reports a
                   "not implemented" infrastructure outcome
  backend_test.go  a test that runs the conformance kit; it fails until
                   Evaluate works, and the kit refuses to run at all when
                   Sandbank ships no fixtures for LANG
  doc.go           the package documentation
  README.md        the remote-backend checklist

NAME must be a Go package name: lower-case letters and digits, starting
with a letter, not a keyword.`,
		Example: `  sandbank new backend mybox --language javascript
  sandbank new backend cloudsandbox --language python --dir ./backends/cloudsandbox`,
		Args: cobra.ExactArgs(1),
		RunE: wrap(func(_ *cobra.Command, args []string) error {
			return a.newBackend(args[0], language, dir)
		}),
	}
	backend.Flags().StringVar(&language, "language", "", "the language `LANG` of the scripts the backend runs (required)")
	backend.Flags().StringVar(&dir, "dir", "", "create the package in `DIR`, which must not exist (default ./NAME)")
	cmd.AddCommand(backend)
	return cmd
}

func (a *app) newBackend(name, language, dir string) error {
	if err := validatePackageName(name); err != nil {
		return usagef("%v", err)
	}
	if language == "" {
		return usagef("--language is required")
	}
	if !languageName.MatchString(language) {
		return usagef("--language %s is not a language name (lower-case letters, digits, _, + or -)", quote(language))
	}
	if dir == "" {
		dir = name
	}
	if _, err := os.Lstat(dir); err == nil {
		return usagef("%s already exists; refusing to overwrite it", quote(dir))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return usagef("--dir: %v", err)
	}
	data := scaffoldFor(name, language)
	files := make(map[string][]byte, len(scaffoldFiles))
	for _, f := range scaffoldFiles {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, f.tmpl, data); err != nil {
			return untyped(fmt.Errorf("rendering %s: %w", f.file, err))
		}
		b := buf.Bytes()
		if strings.HasSuffix(f.file, ".go") {
			formatted, err := format.Source(b)
			if err != nil {
				return untyped(fmt.Errorf("formatting %s: %w", f.file, err))
			}
			b = formatted
		}
		files[f.file] = b
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return usagef("--dir: %v", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return usagef("--dir: %v", err)
	}
	for _, f := range scaffoldFiles {
		if err := os.WriteFile(filepath.Join(dir, f.file), files[f.file], 0o644); err != nil {
			return untyped(err)
		}
	}
	_, err := fmt.Fprintf(a.stdout, "created package %s (%s) in %s\nnext: implement Evaluate in backend.go, then run go test there\n",
		name, language, dir)
	return err
}

// scaffoldFor chooses how the generated test gets its fixtures.
func scaffoldFor(name, language string) scaffold {
	s := scaffold{Name: name, Language: language}
	switch language {
	case "javascript":
		s.DefaultFixtures = true
	case "starlark", "wasm":
		s.FixturesImport = "github.com/sandbank/sandbank/fixtures/" + language
		s.FixturesAlias = language + "fixtures"
	}
	return s
}
