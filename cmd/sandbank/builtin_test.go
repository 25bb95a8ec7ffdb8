package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// runMainInChild runs the real entry point, with the built-in engines, in
// a new process of the test binary. The conformance kit measures its whole
// process's CPU after a limit (it must fall to idle), so a matrix run in
// the test process would count whatever earlier tests left running, such
// as a soft-clock engine's native operation that outlives its deadline.
func runMainInChild(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), realChildEnv+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "the child ran: %v", err)
		code = ee.ExitCode()
	}
	return result{code, out.String(), errb.String()}
}

// runMain calls the real entry point, with the built-in engines.
func runMain(stdin string, args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// shared is a backend that many command line runs share: Close is a no-op,
// and the test closes the backend it wraps when it ends.
type shared struct{ spi.Backend }

// Evaluate hides the wrapped backend's optional interfaces (io.Closer).
func (s shared) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	return s.Backend.Evaluate(ctx, req)
}

// realApp returns an app whose registry holds the real engines, built with
// their packages' New. QuickJS is built once and shared by every run of
// the test, with a long cold-start allowance: compiling it under -race on a
// loaded machine can take longer than its default allowance, and each
// command line run would otherwise compile it again.
func realApp(t *testing.T) *app {
	t.Helper()
	var once sync.Once
	var qjs spi.Backend
	qjsFactory := func() (spi.Backend, error) {
		var err error
		once.Do(func() {
			qjs, err = quickjs.New(&quickjs.Options{ColdStartAllowance: 5 * time.Minute})
			if err == nil {
				t.Cleanup(func() { closeBackend(qjs) })
				// Compile here, outside any run's wall clock: under -race
				// on a loaded machine the compile can outlast the effect's
				// wall clock plus its grace.
				if w, ok := qjs.(spi.Warmer); ok {
					err = w.Warm(context.Background())
				}
			}
		})
		if err != nil {
			return nil, err
		}
		return shared{qjs}, nil
	}
	factories := map[string]spi.Factory{
		"quickjs":  qjsFactory,
		"starlark": func() (spi.Backend, error) { return starlark.New(nil) },
		"extism":   func() (spi.Backend, error) { return extism.New(nil) },
	}
	return &app{
		newRegistry: func() (*registry.Registry, error) {
			r := new(registry.Registry)
			for _, name := range []string{"quickjs", "starlark", "extism"} {
				b, err := factories[name]()
				require.NoError(t, err)
				caps := b.Capabilities()
				if _, isShared := b.(shared); !isShared {
					closeBackend(b)
				}
				r.Register(registry.Entry{Engine: name, Language: caps.Language, Capabilities: caps, Factory: factories[name]})
			}
			return r, nil
		},
		fixtures:  builtin.Fixtures,
		cpuBudget: builtin.CPUBudgetFactory,
	}
}

// TestRunRealEngines runs real scripts on the real engines: a value per
// language, and each typed failure a script can cause.
func TestRunRealEngines(t *testing.T) {
	a := realApp(t)
	shape := script(t, "shape.json", `{"type":"object","required":["total"]}`)
	echoWasm, err := fs.ReadFile(wasm.Set().FS, "echo.wasm")
	require.NoError(t, err)
	wasmFile := filepath.Join(t.TempDir(), "echo.wasm")
	require.NoError(t, os.WriteFile(wasmFile, echoWasm, 0o644))

	tests := []struct {
		name   string
		file   string
		script string
		flags  []string
		code   int
		want   string // the --json object
	}{
		{"javascript value", "v.js", `({double: input.n * 2, s: "é😀"})`, []string{"--input", `{"n":21}`},
			exitOK, `{"ok":true,"value":{"double":42,"s":"é😀"}}`},
		{"starlark value", "v.star", "def main(input):\n    return {\"double\": input[\"n\"] * 2}\n", []string{"--input", `{"n":21}`},
			exitOK, `{"ok":true,"value":{"double":42}}`},
		{"wasm value", "", "", []string{"--input", `{"a":[1,"b"]}`},
			exitOK, `{"ok":true,"value":{"a":[1,"b"]}}`},
		{"scriptError", "t.js", `throw new TypeError("boom")`, nil,
			exitFailure, `{"ok":false,"code":"scriptError","name":"TypeError","message":"boom"}`},
		{"starlark scriptError", "t.star", "def main(input):\n    fail(\"boom\")\n", nil,
			exitFailure, `{"ok":false,"code":"scriptError","name":"fail","message":"boom"}`},
		{"limitExceeded wallClock", "l.js", `for (;;) {}`, []string{"--timeout", "200ms"},
			exitFailure, `{"ok":false,"code":"limitExceeded","kind":"wallClock"}`},
		{"limitExceeded memory", "m.js", `const a = []; for (;;) a.push("x".repeat(1000) + a.length)`, []string{"--memory", "8MiB", "--timeout", "60s"},
			exitFailure, `{"ok":false,"code":"limitExceeded","kind":"memory"}`},
		{"limitExceeded output", "o.js", `"x".repeat(5000000)`, []string{"--timeout", "60s"},
			exitFailure, `{"ok":false,"code":"limitExceeded","kind":"output"}`},
		{"shapeMismatch", "s.js", `({count: 1})`, []string{"--shape", shape},
			exitFailure, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := wasmFile
			if tt.file != "" {
				file = script(t, tt.file, tt.script)
			}
			res := cli(a, "", append(append([]string{"run", "--json"}, tt.flags...), file)...)
			assert.Equal(t, tt.code, res.code, "stderr: %s", res.stderr)
			assert.Empty(t, res.stderr)
			if tt.want != "" {
				assert.JSONEq(t, tt.want, withoutRecord(t, res.stdout))
				return
			}
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
			assert.Equal(t, "shapeMismatch", got["code"])
			assert.NotEmpty(t, got["reason"])
		})
	}
}

// TestRunBuiltin goes through the real entry point and the built-in
// registry. It names the in-process starlark engine and goja, which have
// no compile step, so that it stays quick under -race (the language's
// default, starlark-wasm, compiles a Go guest: a minute and more under
// -race on a loaded machine; the wasm cases are in TestRunRealEngines).
func TestRunBuiltin(t *testing.T) {
	res := runMain("def main(input):\n    return input[\"a\"] + input[\"b\"]\n",
		"run", "--lang", "starlark", "--engine", "starlark", "--input", `{"a":1,"b":2}`, "-")
	assert.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "3\n", res.stdout)

	res = runMain("def main(input):\n    fail(\"nope\")\n", "run", "--engine", "starlark", "-")
	assert.Equal(t, exitFailure, res.code)
	assert.Empty(t, res.stdout)
	assert.Equal(t, "sandbank: effect: scriptError: fail: nope\n", res.stderr)

	res = runMain("({ sum: input.a + input.b })", "run", "--engine", "goja", "--input", `{"a":1,"b":2}`, "-")
	assert.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, `{"sum":3}`+"\n", res.stdout, "goja runs JavaScript when named")

	res = runMain("", "run", "--engine", "nope", script(t, "x.js", "1"))
	assert.Equal(t, exitUsage, res.code)
	assertOneLine(t, res.stderr)
	assert.Contains(t, res.stderr, `unknown engine "nope"`)
}

func TestEnginesBuiltin(t *testing.T) {
	res := runMain("", "engines", "--json")
	require.Equal(t, exitOK, res.code, res.stderr)
	var rows []engineJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows))
	var names []string
	for _, r := range rows {
		names = append(names, r.Engine)
		assert.NoError(t, r.Capabilities.Validate())
	}
	// Every shipped engine, whatever the build (quickjs-wasmtime needs cgo).
	var r registry.Registry
	builtin.Register(&r)
	var want []string
	for _, e := range r.Engines() {
		want = append(want, e.Engine)
	}
	assert.Subset(t, want, []string{"extism", "goja", "quickjs", "starlark"})
	assert.Equal(t, want, names)
}

// TestMatrixBuiltinStarlark runs the real matrix on a real engine through
// the real entry point: the JSON parses, has every case, and the exit
// status follows the verdicts.
func TestMatrixBuiltinStarlark(t *testing.T) {
	res := runMainInChild(t, "matrix", "--engine", "starlark", "--json")
	var rows []matrixRow
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows), res.stdout)
	require.Len(t, rows, 1)
	row := rows[0]
	assert.Equal(t, "starlark", row.Engine)
	assert.Empty(t, row.Refused)
	assert.Len(t, row.Cases, len(conformance.CaseNames()))
	failed := false
	for _, name := range conformance.CaseNames() {
		cell, ok := row.Cases[name]
		assert.True(t, ok, "case %s", name)
		failed = failed || cell.Status == conformance.StatusFail
	}
	assert.Equal(t, "skip", string(row.Cases["allocation_bomb"].Status), "starlark declares no memory limit")
	assert.Equal(t, "pass", string(row.Cases["cpu_budget"].Status), "starlark declares a CPU budget, and the kit proves it: %s", row.Cases["cpu_budget"].Reason)
	if failed {
		assert.Equal(t, exitUntyped, res.code)
	} else {
		assert.Equal(t, exitOK, res.code, res.stderr)
	}
}
