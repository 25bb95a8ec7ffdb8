package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/fixtures/javascript"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// matrixApp returns an app whose registry holds "echo", a javascript fake
// that returns its input for every script (so some cases pass and the
// rest fail), and "nofixtures", a fake of a language without fixtures.
func matrixApp(t *testing.T) *app {
	t.Helper()
	cobol := fakebackend.Capabilities()
	cobol.Language = "cobol"
	return &app{
		newRegistry: func() (*registry.Registry, error) {
			r := new(registry.Registry)
			r.Register(registry.Entry{Engine: "echo", Language: "javascript", Capabilities: fakebackend.Capabilities(),
				Factory: func() (spi.Backend, error) {
					return fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo()), nil
				}})
			r.Register(registry.Entry{Engine: "nofixtures", Language: "cobol", Capabilities: cobol,
				Factory: func() (spi.Backend, error) { return fakebackend.New(cobol, fakebackend.Echo()), nil }})
			return r, nil
		},
		fixtures: func(lang string) (*fixtures.Set, bool) {
			if lang != "javascript" {
				return nil, false
			}
			s := javascript.Set()
			return &s, true
		},
		cpuBudget: func(string) spi.Factory { return nil },
	}
}

func TestMatrixJSON(t *testing.T) {
	a := matrixApp(t)
	res := cli(a, "", "matrix", "--engine", "echo", "--json")
	assert.Equal(t, exitUntyped, res.code, "a failing case makes the matrix exit 1")

	var rows []struct {
		Engine       string                `json:"engine"`
		Language     string                `json:"language"`
		Capabilities spi.Capabilities      `json:"capabilities"`
		Cases        map[string]matrixCell `json:"cases"`
		Refused      string                `json:"refused"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows), res.stdout)
	require.Len(t, rows, 1)
	row := rows[0]
	assert.Equal(t, "echo", row.Engine)
	assert.Equal(t, "javascript", row.Language)
	assert.Equal(t, fakebackend.Capabilities(), row.Capabilities)
	assert.Empty(t, row.Refused)
	for _, name := range conformance.CaseNames() {
		cell, ok := row.Cases[name]
		if assert.True(t, ok, "case %s missing", name) {
			assert.Contains(t, []conformance.Status{conformance.StatusPass, conformance.StatusFail, conformance.StatusSkip}, cell.Status)
			if cell.Status != conformance.StatusPass {
				assert.NotEmpty(t, cell.Reason, "case %s: a FAIL or skip carries its reason", name)
			}
		}
	}
	assert.Len(t, row.Cases, len(conformance.CaseNames()))
	assert.Equal(t, conformance.StatusPass, row.Cases["echo"].Status, "an echo backend passes echo")
	assert.Equal(t, conformance.StatusFail, row.Cases["throw"].Status, "an echo backend fails throw")

	n := len(conformance.CaseNames())
	assert.Contains(t, res.stderr, fmt.Sprintf("[echo 1/%d] echo\n", n), "progress goes to stderr")
	assert.Contains(t, res.stderr, fmt.Sprintf("[echo %d/%d] ", n, n))
	assert.NotContains(t, res.stdout, "[echo ")
}

func TestMatrixTable(t *testing.T) {
	a := matrixApp(t)
	res := cli(a, "", "matrix", "--engine", "echo", "--case", "echo", "--case", "throw")
	assert.Equal(t, exitUntyped, res.code)
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 4, res.stdout)
	assert.Equal(t, []string{"ENGINE", "LANGUAGE", "NETWORK", "WALLCLOCK", "MEMORY", "CPU", "FRESH", "echo", "throw"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"echo", "javascript", "none", "hard", "yes", "yes", "yes", "pass", "FAIL"}, strings.Fields(lines[1]))
	assert.Contains(t, res.stdout, "\nReasons:\n")
	assert.Regexp(t, `(?m)^  echo +throw +FAIL: \S`, res.stdout, "every FAIL is followed by its reason")
	assert.Equal(t, "[echo 1/2] echo\n[echo 2/2] throw\n", res.stderr[:strings.Index(res.stderr, "sandbank:")])
	assert.Contains(t, res.stderr, "sandbank: matrix: 1 of 1 engines failed")
}

func TestMatrixRefusal(t *testing.T) {
	a := matrixApp(t)
	res := cli(a, "", "matrix", "--engine", "nofixtures", "--json")
	assert.Equal(t, exitUntyped, res.code, "a refused engine makes the matrix exit 1")
	var rows []matrixRow
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows), res.stdout)
	require.Len(t, rows, 1)
	assert.Contains(t, rows[0].Refused, "cobol", "the kit's refusal names the language")
	assert.Empty(t, rows[0].Cases)

	res = cli(a, "", "matrix", "--engine", "nofixtures")
	assert.Equal(t, exitUntyped, res.code)
	assert.Regexp(t, `(?m)^  nofixtures +\(refused\) +conformance: `, res.stdout)
}

func TestMatrixUsage(t *testing.T) {
	for _, args := range [][]string{
		{"matrix", "--engine", "nope"},
		{"matrix", "--case", "nope"},
		{"matrix", "extra"},
	} {
		res := cli(matrixApp(t), "", args...)
		assert.Equal(t, exitUsage, res.code, "%v", args)
		assert.Empty(t, res.stdout)
		assertOneLine(t, res.stderr)
	}
}

func TestMatrixEngineSelection(t *testing.T) {
	a := matrixApp(t)
	res := cli(a, "", "matrix", "--engine", "nofixtures", "--engine", "echo", "--engine", "nofixtures", "--case", "echo", "--json")
	var rows []matrixRow
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows), res.stdout)
	require.Len(t, rows, 2, "a repeated engine runs once")
	assert.Equal(t, "nofixtures", rows[0].Engine, "engines run in the order given")
	assert.Equal(t, "echo", rows[1].Engine)
	assert.Equal(t, map[string]matrixCell{"echo": {Status: conformance.StatusPass}}, rows[1].Cases)

	res = cli(a, "", "matrix", "--case", "echo", "--json")
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows), res.stdout)
	require.Len(t, rows, 2, "without --engine, every engine runs")
	assert.Equal(t, "echo", rows[0].Engine, "sorted by name")
}
