package main

import (
	"encoding/json"
	"go/format"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/spi"
)

func TestEngines(t *testing.T) {
	a, _ := fakeApp(t)
	res := cli(a, "", "engines")
	require.Equal(t, exitOK, res.code, res.stderr)
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	require.Len(t, lines, 5, res.stdout, "no descriptions for the fakes")
	assert.Equal(t, []string{"ENGINE", "LANGUAGE", "DEFAULT", "NETWORK", "WALLCLOCK", "MEMORY", "CPU", "FRESH"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"fake", "javascript", "yes", "none", "hard", "yes", "yes", "yes"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{"fakebroken", "javascript", "no", "none", "hard", "yes", "yes", "yes"}, strings.Fields(lines[2]))
	assert.Equal(t, []string{"fakeopen", "javascript", "no", "open", "hard", "yes", "yes", "no"}, strings.Fields(lines[3]))

	res = cli(a, "", "engines", "--json")
	require.Equal(t, exitOK, res.code, res.stderr)
	var rows []engineJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows), res.stdout)
	require.Len(t, rows, 4)
	assert.Equal(t, engineJSON{Engine: "fake", Language: "javascript", Default: true, Capabilities: fakebackend.Capabilities()}, rows[0])
	assert.Equal(t, "fakestar", rows[3].Engine)
	assert.True(t, rows[3].Default, "the only starlark engine is its language's default")
	assert.Equal(t, spi.NetworkOpen, rows[2].Capabilities.Network)

	res = cli(a, "", "engines", "extra")
	assert.Equal(t, exitUsage, res.code)
	assertOneLine(t, res.stderr)
}

func TestVersion(t *testing.T) {
	a, _ := fakeApp(t)
	res := cli(a, "", "version")
	require.Equal(t, exitOK, res.code, res.stderr)
	lines := strings.Split(res.stdout, "\n")
	require.GreaterOrEqual(t, len(lines), 3, res.stdout)
	assert.Equal(t, "sandbank (devel)", lines[0], "a test binary is a development build")
	assert.Equal(t, "spi "+spi.Version, lines[1])
	assert.Regexp(t, `^go1\.\d+\S* \w+/\w+, cgo (on|off)$`, lines[2])

	res = cli(a, "", "--version")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "sandbank (devel)\n", res.stdout)

	res = cli(a, "", "version", "--json")
	require.Equal(t, exitOK, res.code, res.stderr)
	var v versionJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &v), res.stdout)
	assert.Equal(t, runtime.Version(), v.Go)
	assert.Equal(t, buildHasCgo, v.Cgo)
	assert.Equal(t, spi.Version, v.SPI)

	assert.Equal(t, "(devel)", moduleVersion(nil, false))
	assert.Equal(t, "(devel)", moduleVersion(&debug.BuildInfo{}, true))
	assert.Equal(t, "v1.2.3", moduleVersion(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true))
	stamped := buildVersion(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}, true)
	assert.Equal(t, "abc123", stamped.Commit)
	assert.Equal(t, "2026-12-01T00:00:00Z", stamped.CommitTime)
	assert.True(t, stamped.Modified)
	assert.Equal(t, "v1.2.3", stamped.Version)
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		a, _ := fakeApp(t)
		res := cli(a, "", "completion", shell)
		assert.Equal(t, exitOK, res.code, res.stderr)
		assert.Contains(t, res.stdout, "sandbank", shell)
	}
	a, _ := fakeApp(t)
	res := cli(a, "", "__complete", "run", "--engine", "")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "fake\tjavascript\n")
	assert.Contains(t, res.stdout, "fakestar\tstarlark\n")

	res = cli(a, "", "__complete", "run", "--lang", "")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "javascript\n")
	assert.Contains(t, res.stdout, "starlark\n")

	res = cli(a, "", "__complete", "matrix", "--engine", "fakes")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "fakestar")

	res = cli(a, "", "__complete", "matrix", "--case", "")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "runaway_loop\n")
}

// TestCobraErrorsAreOneReadableLine: cobra's suggestions are folded into
// the line, not mangled into "; ; Did you mean this?; \trun;".
func TestCobraErrorsAreOneReadableLine(t *testing.T) {
	a, _ := fakeApp(t)
	res := cli(a, "", "runn", "x.js")
	assert.Equal(t, exitUsage, res.code)
	assertOneLine(t, res.stderr)
	assert.Equal(t, `sandbank: unknown command "runn" for "sandbank" (did you mean "run"?) (see 'sandbank --help')`+"\n", res.stderr)
	assert.NotContains(t, res.stderr, "; ;")
	assert.NotContains(t, res.stderr, "\t")

	assert.Equal(t, `unknown command "x" for "y" (did you mean "a" or "b"?)`,
		formatCobraError("unknown command \"x\" for \"y\"\n\nDid you mean this?\n\ta\n\tb\n"))
	assert.Equal(t, `required flag(s) "language" not set`, formatCobraError(`required flag(s) "language" not set`))
}

// TestEngineNotInThisBuild: a cgo engine asked for in a build without
// cgo says so, instead of the registry's "forgotten registration?".
func TestEngineNotInThisBuild(t *testing.T) {
	a, _ := fakeApp(t)
	reg, err := a.newRegistry()
	require.NoError(t, err)
	err = unknownEngine(reg, "quickjs-wasmtime", false)
	assert.Contains(t, err.Error(), `engine "quickjs-wasmtime" is not in this build: it needs cgo`)
	err = unknownEngine(reg, "nope", false)
	assert.Equal(t, `unknown engine "nope" (engines: fake, fakebroken, fakeopen, fakestar; see 'sandbank engines')`, err.Error())
	assert.NotContains(t, err.Error(), "forgotten registration")

	res := cli(a, "", "run", "--engine", "quickjs-wasmtime", script(t, "x.js", "value 1"))
	assert.Equal(t, exitUsage, res.code)
	assertOneLine(t, res.stderr)
	if !buildHasCgo {
		assert.Contains(t, res.stderr, "is not in this build: it needs cgo")
	}
}

func TestHelpForEveryCommand(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"run", "--help"}, {"matrix", "--help"}, {"engines", "--help"},
		{"new", "--help"}, {"new", "backend", "--help"}, {"version", "--help"}, {"mcp", "--help"},
	} {
		a, _ := fakeApp(t)
		res := cli(a, "", args...)
		assert.Equal(t, exitOK, res.code, "%v", args)
		assert.Contains(t, res.stdout, "Examples:", "%v has examples", args)
		assert.Contains(t, res.stdout, "Usage:", "%v", args)
	}
}

func TestNewBackend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pkgs", "mybox")
	a, _ := fakeApp(t)
	res := cli(a, "", "new", "backend", "mybox", "--language", "javascript", "--dir", dir)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "created package mybox (javascript) in "+dir)

	for _, f := range scaffoldFiles {
		b, err := os.ReadFile(filepath.Join(dir, f.file))
		require.NoError(t, err, f.file)
		if strings.HasSuffix(f.file, ".go") {
			formatted, err := format.Source(b)
			require.NoError(t, err, f.file)
			assert.Equal(t, string(formatted), string(b), "%s is gofmt'd", f.file)
			assert.True(t, strings.Contains(string(b), "\npackage mybox\n") || strings.HasPrefix(string(b), "package mybox\n"), f.file)
		}
	}
	backend, err := os.ReadFile(filepath.Join(dir, "backend.go"))
	require.NoError(t, err)
	for _, want := range []string{
		`Language:    "javascript"`, "Network:     spi.NetworkOpen", "WallClock:   spi.WallClockSoft",
		"Memory:      false", "CPU:         false", "FreshPerRun: false", `spi.Infrastructure("mybox: not implemented")`,
	} {
		assert.Contains(t, string(backend), want)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	for _, want := range []string{
		"No service account or credentials", "Egress denied at the network layer", "One request per instance",
		"The request timeout is the hard kill", "Memory and CPU caps", "No shared writable state",
		"Memory false and CPU false mean that an in-process backend can exhaust\nthe host",
	} {
		assert.Contains(t, string(readme), want)
	}

	res = cli(a, "", "new", "backend", "mybox", "--language", "javascript", "--dir", dir)
	assert.Equal(t, exitUsage, res.code, "an existing directory is refused")
	assertOneLine(t, res.stderr)
	assert.Contains(t, res.stderr, "already exists")
	after, err := os.ReadFile(filepath.Join(dir, "backend.go"))
	require.NoError(t, err)
	assert.Equal(t, backend, after, "nothing was overwritten")
}

func TestNewBackendDefaultDir(t *testing.T) {
	t.Chdir(t.TempDir())
	a, _ := fakeApp(t)
	res := cli(a, "", "new", "backend", "box2", "--language", "python")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.FileExists(t, filepath.Join("box2", "backend.go"))
	test, err := os.ReadFile(filepath.Join("box2", "backend_test.go"))
	require.NoError(t, err)
	assert.Contains(t, string(test), "Sandbank ships no python fixtures")
}

func TestNewBackendUsageErrors(t *testing.T) {
	existing := t.TempDir()
	base := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"keyword", []string{"type", "--language", "javascript"}, "keyword"},
		{"upper case", []string{"MyBox", "--language", "javascript"}, "not a Go package name"},
		{"dash", []string{"my-box", "--language", "javascript"}, "not a Go package name"},
		{"underscore", []string{"my_box", "--language", "javascript"}, "not a Go package name"},
		{"leading digit", []string{"1box", "--language", "javascript"}, "not a Go package name"},
		{"path", []string{"../box", "--language", "javascript"}, "not a Go package name"},
		{"main", []string{"main", "--language", "javascript"}, `"main"`},
		{"no language", []string{"box"}, "--language is required"},
		{"odd language", []string{"box", "--language", "Java Script"}, "not a language name"},
		{"quote in language", []string{"box", "--language", `js"`}, "not a language name"},
		{"existing dir", []string{"box", "--language", "javascript", "--dir", existing}, "already exists"},
		{"no name", []string{"--language", "javascript"}, "accepts 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(base)
			a, _ := fakeApp(t)
			res := cli(a, "", append([]string{"new", "backend"}, tt.args...)...)
			assert.Equal(t, exitUsage, res.code)
			assert.Empty(t, res.stdout)
			assertOneLine(t, res.stderr)
			assert.Contains(t, res.stderr, tt.want)
		})
	}
	left, err := os.ReadDir(base)
	require.NoError(t, err)
	assert.Empty(t, left, "a refused scaffold writes nothing")
}
