package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// result is what one command line run left behind.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the command line of a with args and stdin.
func cli(a *app, stdin string, args ...string) result {
	var out, errb bytes.Buffer
	a.stdin, a.stdout, a.stderr = strings.NewReader(stdin), &out, &errb
	code := a.execute(args)
	return result{code, out.String(), errb.String()}
}

// directive is the fake engines' script language: the script text says
// what the backend reports.
//
//	value JSON         spi.OK(JSON)
//	echo               spi.OK(input)
//	throw NAME MSG     spi.Threw(NAME, MSG)
//	limit KIND         spi.Limited(cpu|memory|wallClock)
//	toolarge           spi.InputTooLarge()
//	infra MSG          spi.Infrastructure(MSG)
//	big N              spi.OK(a JSON string of N "x")
//	error MSG          a Go error: no outcome
func directive(_ context.Context, req spi.Request) (spi.Outcome, error) {
	verb, rest, _ := strings.Cut(strings.TrimSpace(string(req.Script)), " ")
	switch verb {
	case "value":
		return spi.OK(json.RawMessage(rest)), nil
	case "echo":
		return spi.OK(req.Input), nil
	case "throw":
		name, msg, _ := strings.Cut(rest, " ")
		return spi.Threw(name, msg), nil
	case "limit":
		kinds := map[string]spi.LimitKind{"cpu": spi.LimitCPU, "memory": spi.LimitMemory, "wallClock": spi.LimitWallClock}
		return spi.Limited(kinds[rest]), nil
	case "toolarge":
		return spi.InputTooLarge(), nil
	case "infra":
		return spi.Infrastructure(rest), nil
	case "big":
		n := 0
		for _, c := range rest {
			n = n*10 + int(c-'0')
		}
		return spi.OK(json.RawMessage(`"` + strings.Repeat("x", n) + `"`)), nil
	case "error":
		return spi.Outcome{}, errors.New(rest)
	}
	return spi.Infrastructure("fake: unknown directive"), nil
}

// recorder keeps the last backend the "fake" engine built.
type recorder struct{ last *fakebackend.Backend }

// fakeApp returns an app whose registry holds fake engines:
//
//	fake       javascript (the default), strongest declaration, runs directives
//	fakeopen   javascript, network open and a reused environment
//	fakebroken javascript, its factory fails
//	fakestar   starlark, runs directives
func fakeApp(t *testing.T) (*app, *recorder) {
	t.Helper()
	rec := &recorder{}
	return &app{
		newRegistry: fakeRegistry(rec, directive),
		fixtures:    func(string) (*fixtures.Set, bool) { return nil, false },
		cpuBudget:   func(string) spi.Factory { return nil },
	}, rec
}

// fakeRegistry returns the registry builder of fakeApp, whose engines run
// script as their directive interpreter.
func fakeRegistry(rec *recorder, script fakebackend.Behavior) func() (*registry.Registry, error) {
	open := fakebackend.Capabilities()
	open.Network, open.FreshPerRun = spi.NetworkOpen, false
	star := fakebackend.Capabilities()
	star.Language = "starlark"
	return func() (*registry.Registry, error) {
		r := new(registry.Registry)
		r.Register(registry.Entry{Engine: "fake", Language: "javascript", Capabilities: fakebackend.Capabilities(),
			Factory: func() (spi.Backend, error) {
				rec.last = fakebackend.New(fakebackend.Capabilities(), script)
				return rec.last, nil
			}})
		r.Register(registry.Entry{Engine: "fakeopen", Language: "javascript", Capabilities: open,
			Factory: func() (spi.Backend, error) { return fakebackend.New(open, script), nil }})
		r.Register(registry.Entry{Engine: "fakebroken", Language: "javascript", Capabilities: fakebackend.Capabilities(),
			Factory: func() (spi.Backend, error) { return nil, errors.New("fake: cannot start") }})
		r.Register(registry.Entry{Engine: "fakestar", Language: "starlark", Capabilities: star,
			Factory: func() (spi.Backend, error) { return fakebackend.New(star, script), nil }})
		if err := r.SetDefault("javascript", "fake"); err != nil {
			return nil, err
		}
		return r, nil
	}
}

// script writes a script file and returns its path.
func script(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// assertOneLine checks that stderr is exactly one line, with no Go stack
// trace.
func assertOneLine(t *testing.T, stderr string) {
	t.Helper()
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "stderr must be one line: %q", stderr)
	assert.True(t, strings.HasPrefix(stderr, "sandbank: "), "stderr: %q", stderr)
	assert.NotContains(t, stderr, "goroutine")
	assert.NotContains(t, stderr, "panic")
}

func TestRunValue(t *testing.T) {
	a, rec := fakeApp(t)
	p := script(t, "s.js", `echo`)
	res := cli(a, "", "run", "--input", `{"b": [1, 2], "a": "é"}`, "--memory", "8MiB", "--timeout", "1500ms", p)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, `{"a":"é","b":[1,2]}`+"\n", res.stdout, "the value, as the effect's canonical JSON")
	assert.Empty(t, res.stderr)
	req := rec.last.LastRequest()
	assert.JSONEq(t, `{"b": [1, 2], "a": "é"}`, string(req.Input))
	assert.Equal(t, spi.Limits{WallClock: 1500e6, MemoryBytes: 8 << 20}, req.Limits, "--memory and --timeout reach the backend")

	res = cli(a, "", "run", "--json", p)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.JSONEq(t, `{"ok":true,"value":null}`, withoutRecord(t, res.stdout), "no input means null")
	assert.Equal(t, 1, strings.Count(res.stdout, "\n"))
}

func TestRunEngineChoice(t *testing.T) {
	a, rec := fakeApp(t)
	js := script(t, "s.js", `value 1`)
	star := script(t, "s.star", `value 2`)

	res := cli(a, "", "run", js)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "1\n", res.stdout, ".js runs the javascript default")
	assert.NotNil(t, rec.last)

	res = cli(a, "", "run", star)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "2\n", res.stdout, ".star runs the starlark default")

	res = cli(a, "value 3", "run", "--lang", "starlark", "-")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "3\n", res.stdout, "- reads the script from stdin")

	res = cli(a, "value 4", "run", "--engine", "fakeopen", "--allow-network", "--allow-reused-environment", "-")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "4\n", res.stdout, "the opt-ins accept an engine the effect refuses by default")
}

func TestRunStore(t *testing.T) {
	a, _ := fakeApp(t)
	dir := filepath.Join(t.TempDir(), "store")
	res := cli(a, "", "run", "--store", dir, script(t, "s.js", "value 5"))
	require.Equal(t, exitOK, res.code, res.stderr)
	// sha256("value 5") lives at <dir>/<hex[:2]>/<hex>.
	found, err := filepath.Glob(filepath.Join(dir, "*", "*"))
	require.NoError(t, err)
	require.Len(t, found, 1, "the script is kept in --store")
	b, err := os.ReadFile(found[0])
	require.NoError(t, err)
	assert.Equal(t, "value 5", string(b))

	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res = cli(a, "", "run", script(t, "s.js", "value 6"))
	require.Equal(t, exitOK, res.code, res.stderr)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "without --store nothing is written")
}

func TestRunTypedFailures(t *testing.T) {
	shapeFile := script(t, "shape.json", `{"type":"string"}`)
	bigInput := script(t, "big.json", `"`+strings.Repeat("x", 33<<20)+`"`)
	tests := []struct {
		name   string
		script string
		flags  []string
		want   string // the --json object
	}{
		{"scriptError", "throw TypeError boom", nil, `{"ok":false,"code":"scriptError","name":"TypeError","message":"boom"}`},
		{"limitExceeded wallClock", "limit wallClock", []string{"--timeout", "50ms"}, `{"ok":false,"code":"limitExceeded","kind":"wallClock"}`},
		{"limitExceeded memory", "limit memory", []string{"--memory", "1MiB"}, `{"ok":false,"code":"limitExceeded","kind":"memory"}`},
		{"limitExceeded cpu", "limit cpu", nil, `{"ok":false,"code":"limitExceeded","kind":"cpu"}`},
		{"limitExceeded output", "big 4194400", nil, `{"ok":false,"code":"limitExceeded","kind":"output"}`},
		{"inputTooLarge while parsing", "toolarge", []string{"--memory", "1MiB", "--input", "[1]"}, `{"ok":false,"code":"inputTooLarge","kind":"memory","bytes":3,"limit":1048576}`},
		{"inputTooLarge before the run", "echo", []string{"--input-file", bigInput}, `{"ok":false,"code":"inputTooLarge","kind":"input","bytes":34603010,"limit":33554432}`},
		{"scriptTooLarge", "value 1" + strings.Repeat(" ", 16<<20), nil, `{"ok":false,"code":"scriptTooLarge","bytes":16777223,"limit":16777216}`},
		{"shapeMismatch", "value 42", []string{"--shape", shapeFile}, ""},
		// scriptMissing cannot happen from the command line: run stores
		// the script before it evaluates it. inputNotSerializable cannot
		// either: invalid --input is a usage error, found before the
		// effect (see TestRunUsageErrors).
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := fakeApp(t)
			p := script(t, "s.js", tt.script)
			res := cli(a, "", append(append([]string{"run"}, tt.flags...), p)...)
			assert.Equal(t, exitFailure, res.code)
			assert.Empty(t, res.stdout)
			assertOneLine(t, res.stderr)
			assert.Contains(t, res.stderr, "effect: ")

			res = cli(a, "", append(append([]string{"run", "--json"}, tt.flags...), p)...)
			assert.Equal(t, exitFailure, res.code)
			assert.Empty(t, res.stderr)
			if tt.want != "" {
				assert.JSONEq(t, tt.want, withoutRecord(t, res.stdout))
			} else {
				var got map[string]any
				require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
				assert.Equal(t, false, got["ok"])
				assert.Equal(t, "shapeMismatch", got["code"])
				assert.NotEmpty(t, got["reason"])
			}
		})
	}
}

func TestRunUntyped(t *testing.T) {
	tests := []struct {
		name, engine, script string
		wantErr              string
	}{
		{"infrastructure outcome", "fake", "infra engine crashed", "engine crashed"},
		{"backend error", "fake", "error no outcome", "no outcome"},
		{"factory fails", "fakebroken", "value 1", "fake: cannot start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := fakeApp(t)
			res := cli(a, tt.script, "run", "--engine", tt.engine, "-")
			assert.Equal(t, exitUntyped, res.code)
			assert.Empty(t, res.stdout)
			assertOneLine(t, res.stderr)
			assert.Contains(t, res.stderr, tt.wantErr)

			res = cli(a, tt.script, "run", "--json", "--engine", tt.engine, "-")
			assert.Equal(t, exitUntyped, res.code)
			assert.Empty(t, res.stderr)
			var got struct {
				OK        *bool  `json:"ok"`
				Error     string `json:"error"`
				Retryable *bool  `json:"retryable"`
			}
			dec := json.NewDecoder(strings.NewReader(withoutRecord(t, res.stdout)))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&got), res.stdout)
			require.NotNil(t, got.OK)
			require.NotNil(t, got.Retryable)
			assert.False(t, *got.OK)
			assert.True(t, *got.Retryable)
			assert.Contains(t, got.Error, tt.wantErr)
		})
	}
}

func TestRunUsageErrors(t *testing.T) {
	dir := t.TempDir()
	js := script(t, "s.js", "value 1")
	notJSON := script(t, "in.json", "{nope")
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"no script", "", []string{"run"}, "accepts 1 arg"},
		{"two scripts", "", []string{"run", js, js}, "accepts 1 arg"},
		{"unknown flag", "", []string{"run", "--bogus", js}, "unknown flag"},
		{"unknown command", "", []string{"runn", js}, "unknown command"},
		{"unreadable script", "", []string{"run", filepath.Join(dir, "missing.js")}, "cannot read script"},
		{"script is a directory", "", []string{"run", "--lang", "javascript", dir}, "cannot read script"},
		{"unknown engine", "", []string{"run", "--engine", "nope", js}, `unknown engine "nope"`},
		{"unknown language", "", []string{"run", "--lang", "cobol", js}, `unknown language "cobol"`},
		{"engine and language disagree", "", []string{"run", "--engine", "fake", "--lang", "starlark", js}, `runs javascript, not "starlark"`},
		{"unknown extension", "", []string{"run", script(t, "s.rb", "value 1")}, "cannot tell the language"},
		{"stdin without language", "value 1", []string{"run", "-"}, "needs --lang or --engine"},
		{"invalid JSON input", "", []string{"run", "--input", "{nope", js}, "--input: invalid JSON at line 1, column 2"},
		{"invalid JSON input file", "", []string{"run", "--input-file", notJSON, js}, "invalid JSON at line 1, column 2"},
		{"missing input file", "", []string{"run", "--input-file", filepath.Join(dir, "none.json"), js}, "--input-file"},
		{"both inputs", "", []string{"run", "--input", "1", "--input-file", notJSON, js}, "cannot be used together"},
		{"memory without number", "", []string{"run", "--memory", "MiB", js}, "--memory"},
		{"memory unknown unit", "", []string{"run", "--memory", "32MB2", js}, "--memory"},
		{"memory unit only", "", []string{"run", "--memory", " MiB", js}, "--memory"},
		{"memory zero", "", []string{"run", "--memory", "0", js}, "--memory"},
		{"memory negative", "", []string{"run", "--memory", "-1", js}, "--memory"},
		{"memory overflow", "", []string{"run", "--memory", "9999999999999GiB", js}, "--memory"},
		{"bad timeout", "", []string{"run", "--timeout", "soon", js}, "--timeout"},
		{"zero timeout", "", []string{"run", "--timeout", "0s", js}, "--timeout"},
		{"shape not JSON", "", []string{"run", "--shape", notJSON, js}, "--shape"},
		{"store is a file", "", []string{"run", "--store", js, js}, "--store"},
		{"network refused", "value 1", []string{"run", "--engine", "fakeopen", "--allow-reused-environment", "-"}, "--allow-network"},
		{"reused environment refused", "value 1", []string{"run", "--engine", "fakeopen", "--allow-network", "-"}, "--allow-reused-environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				a, rec := fakeApp(t)
				args := tt.args
				if asJSON && len(args) > 0 && args[0] == "run" {
					args = append([]string{"run", "--json"}, args[1:]...)
				}
				res := cli(a, tt.stdin, args...)
				assert.Equal(t, exitUsage, res.code, "stderr: %s", res.stderr)
				assert.Empty(t, res.stdout, "a usage error prints nothing on stdout")
				assertOneLine(t, res.stderr)
				assert.Contains(t, res.stderr, tt.want)
				assert.Nil(t, rec.last, "no engine runs on a usage error")
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	good := map[string]int64{
		"1": 1, "1048576": 1 << 20, "512B": 512, "32MiB": 32 << 20, "1GiB": 1 << 30, "4KiB": 4096,
		"1GB": 1e9, "2MB": 2e6, "3KB": 3000, "1TiB": 1 << 40,
		// As people type them: case, spaces, fractions, thousands.
		"32mb": 32e6, "32 MiB": 32 << 20, "32mib": 32 << 20, "32 MB": 32e6, "1.5MiB": 3 << 19,
		"1,048,576": 1 << 20, " 16MiB ": 16 << 20, "2k": 2000,
	}
	for in, want := range good {
		got, err := parseBytes(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "MiB", "0", "-1", "+1", "32parsecs", "1 GiB x", "9223372036854775808", "8589934592GiB", "0x10"} {
		_, err := parseBytes(in)
		assert.Error(t, err, in)
	}
}

func TestPanicIsOneLine(t *testing.T) {
	a, _ := fakeApp(t)
	reg := a.newRegistry
	a.newRegistry = func() (*registry.Registry, error) {
		r, err := reg()
		r.Register(registry.Entry{Engine: "fakepanic", Language: "javascript", Capabilities: fakebackend.Capabilities(),
			Factory: func() (spi.Backend, error) { panic("fake: factory exploded") }})
		return r, err
	}
	res := cli(a, "value 1", "run", "--engine", "fakepanic", "-")
	assert.Equal(t, exitUntyped, res.code)
	assert.Empty(t, res.stdout)
	assert.Equal(t, "sandbank: pool: building engine fakepanic: the engine's factory panicked: fake: factory exploded\n", res.stderr, "the pool recovers a panicking factory: infrastructure, exit 1")

	a.newRegistry = func() (*registry.Registry, error) { return nil, errors.New("fake: no engines") }
	res = cli(a, "value 1", "run", "--lang", "javascript", "-")
	assert.Equal(t, exitUntyped, res.code)
	assert.Equal(t, "sandbank: fake: no engines\n", res.stderr)
}

func TestRegistryFromRecoversAPanic(t *testing.T) {
	r, err := registryFrom(func(*registry.Registry) { panic("builtin: engine \"x\": no engine") })
	assert.Nil(t, r)
	assert.EqualError(t, err, `registering the built-in engines: builtin: engine "x": no engine`)

	r, err = builtinRegistry()
	require.NoError(t, err)
	assert.NotEmpty(t, r.Engines())
}
