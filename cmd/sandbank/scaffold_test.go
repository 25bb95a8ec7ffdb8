package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScaffoldBuildsAndRunsTheKit generates backends into a temporary
// module that requires this working tree (go.mod replace), then runs the go
// command on it: vet and build succeed; the test of a javascript stub fails
// clearly (kit failures, no panic, no build error); the test of a language
// without fixtures fails with the kit's refusal. It is slow-ish (it builds
// the kit), so -short skips it. It works offline: GOPROXY=off, and the
// module cache already holds every dependency of this module.
func TestScaffoldBuildsAndRunsTheKit(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds and tests a generated module with the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"), "the repository root")

	mod := t.TempDir()
	goMod := "module example.com/scaffolded\n\ngo 1.25.0\n\n" +
		"require github.com/sandbank/sandbank v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/sandbank/sandbank => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(goMod), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644))

	for _, gen := range [][]string{
		{"new", "backend", "jsbox", "--language", "javascript", "--dir", filepath.Join(mod, "jsbox")},
		{"new", "backend", "cobolbox", "--language", "cobol", "--dir", filepath.Join(mod, "cobolbox")},
		{"new", "backend", "starbox", "--language", "starlark", "--dir", filepath.Join(mod, "starbox")},
	} {
		a, _ := fakeApp(t)
		res := cli(a, "", gen...)
		require.Equal(t, exitOK, res.code, res.stderr)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	goCmd := func(args ...string) (string, int) {
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			var ee *exec.ExitError
			if assert.ErrorAs(t, err, &ee, "go %v: %s", args, out) {
				return string(out), ee.ExitCode()
			}
			return string(out), -1
		}
		return string(out), 0
	}

	out, code := goCmd("vet", "./...")
	require.Equal(t, 0, code, "go vet on the scaffold:\n%s", out)
	out, code = goCmd("build", "./...")
	require.Equal(t, 0, code, "go build on the scaffold:\n%s", out)

	out, code = goCmd("test", "-v", "-count=1", "./jsbox")
	assert.Equal(t, 1, code, "the stub's kit run fails:\n%s", out)
	assert.Contains(t, out, "--- FAIL: TestConformance/echo", "the kit ran and failed a case")
	assert.Contains(t, out, "conformance case echo failed")
	assert.Contains(t, out, "jsbox: not implemented", "the failure says why")
	assert.Contains(t, out, "--- SKIP: TestConformance/no_network", "the worst-case declaration skips what it does not claim")
	assert.NotContains(t, out, "panic:")
	assert.NotContains(t, out, "[build failed]")
	assert.NotContains(t, out, "[setup failed]")

	out, code = goCmd("test", "-count=1", "./starbox")
	assert.Equal(t, 1, code, "the starlark stub's kit run fails:\n%s", out)
	assert.Contains(t, out, "conformance case echo failed", "the kit ran on the shipped starlark fixtures")
	assert.Contains(t, out, "starbox: not implemented")
	assert.NotContains(t, out, "panic:")

	out, code = goCmd("test", "-count=1", "./cobolbox")
	assert.Equal(t, 1, code, "the kit refuses a language without fixtures:\n%s", out)
	assert.Contains(t, out, `no fixtures for language "cobol"`)
	assert.NotContains(t, out, "panic:")
	assert.NotContains(t, out, "[build failed]")
	assert.False(t, strings.Contains(out, "--- PASS"), "nothing passes vacuously")
}

// TestScaffoldNewReturnsBackend: the generated New returns the concrete
// *Backend, as the shipped backends' and docs/design.md's do (accept
// interfaces, return structs), not spi.Backend.
func TestScaffoldNewReturnsBackend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "box")
	a, _ := fakeApp(t)
	res := cli(a, "", "new", "backend", "box", "--language", "javascript", "--dir", dir)
	require.Equal(t, exitOK, res.code, res.stderr)
	src, err := os.ReadFile(filepath.Join(dir, "backend.go"))
	require.NoError(t, err)
	assert.Contains(t, string(src), "func New(opts *Options) (*Backend, error) {")
	assert.Contains(t, string(src), "type Backend struct {")
	assert.Contains(t, string(src), "var _ spi.Backend = (*Backend)(nil)")
}
