package main

import (
	"encoding/json"
	"fmt"
	"io"
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
		Proofs       []conformance.Proof   `json:"proofs"`
		Refused      string                `json:"refused"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows), res.stdout)
	require.Len(t, rows, 1)
	row := rows[0]
	assert.NotEmpty(t, row.Proofs, "the JSON says which measurements proved each declared capability")
	assert.NotEmpty(t, row.Cases["echo"].Evidence, "a case's measured figures are in the JSON")
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
	require.GreaterOrEqual(t, len(lines), 10, res.stdout)
	assert.Equal(t, []string{"echo"}, strings.Fields(lines[0]), "one column per engine")
	assert.Equal(t, []string{"network", "none"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{"wall", "clock", "hard"}, strings.Fields(lines[2]))
	assert.Equal(t, []string{"host", "calls", "no"}, strings.Fields(lines[6]))
	assert.Equal(t, "", lines[7])
	assert.Equal(t, []string{"echo", "pass"}, strings.Fields(lines[8]), "one row per case")
	assert.Equal(t, []string{"throw", "FAIL"}, strings.Fields(lines[9]))
	assert.Contains(t, res.stdout, "\nEngines: echo = echo (javascript)\n")
	assert.Contains(t, res.stdout, "\nReasons:\n")
	assert.Regexp(t, `(?m)^  throw on echo: FAIL: \S`, res.stdout, "every FAIL is followed by its reason")
	assert.Equal(t, "1 pass, 0 skip (declared), 1 fail", lines[len(lines)-1])
	assert.Equal(t, "[echo 1/2] echo\n[echo 2/2] throw\n", res.stderr[:strings.Index(res.stderr, "sandbank:")])
	assert.Contains(t, res.stderr, "sandbank: matrix: 1 of 1 engines failed")
}

// TestMatrixFits100Columns renders a matrix of many engines with long
// names and many cases, some beyond what the kit has today: every line
// fits, every engine and case is shown, the reasons are grouped.
func TestMatrixFits100Columns(t *testing.T) {
	caps := fakebackend.Capabilities()
	var rows []*matrixRow
	cases := append(conformance.CaseNames(), "a_case_added_later_with_a_long_name")
	for i := range 14 {
		r := &matrixRow{Engine: fmt.Sprintf("an-engine-with-a-long-name-%d", i), Language: "javascript", Capabilities: caps, Cases: map[string]matrixCell{}}
		for j, c := range cases {
			switch {
			case j%5 == 1:
				r.Cases[c] = matrixCell{Status: conformance.StatusSkip, Reason: "gated by CPU: the backend does not declare a CPU budget, and this reason is long enough to need wrapping on its own line"}
			case j%7 == 2 && i == 3:
				r.Cases[c] = matrixCell{Status: conformance.StatusFail, Reason: "broke a rule"}
			default:
				r.Cases[c] = matrixCell{Status: conformance.StatusPass}
			}
		}
		rows = append(rows, r)
	}
	rows = append(rows, &matrixRow{Engine: "quickjs-wasmtime", Language: "javascript", Capabilities: caps, Refused: "conformance: no fixtures"})
	var out strings.Builder
	require.NoError(t, printMatrix(&out, rows, matrixColumns(conformance.CaseNames(), rows)))
	text := out.String()
	for _, line := range strings.Split(text, "\n") {
		assert.LessOrEqual(t, len([]rune(line)), tableWidth, "%q", line)
	}
	for _, c := range cases {
		assert.Regexp(t, `(?m)^`+c+` `, text, "a row for case %s, new ones too", c)
	}
	labels := engineLabels([]string{rows[0].Engine, rows[1].Engine})
	assert.NotEqual(t, labels[0], labels[1], "abbreviations stay distinct")
	assert.Contains(t, text, "qjs-wt = quickjs-wasmtime (javascript)")
	assert.Contains(t, text, "  quickjs-wasmtime refused: conformance: no fixtures\n")
	assert.Equal(t, 1, strings.Count(text, "  throw on an-engine-with-a-long-name-0, an-engine-with-a-long-name-1,"), "engines sharing a reason share one entry")
	s := summarize(rows, cases)
	assert.Equal(t, 14*len(cases), s.pass+s.skip+s.fail)
	assert.True(t, strings.HasSuffix(text, s.String()+"\n"))
	assert.Contains(t, s.String(), "1 engine(s) refused")
}

// TestMatrixProgressOnATerminal: one line updated in place, cleared
// before the table; plain lines otherwise (TestMatrixTable).
func TestMatrixProgressOnATerminal(t *testing.T) {
	a := matrixApp(t)
	a.isTerminal = func(io.Writer) bool { return true }
	res := cli(a, "", "matrix", "--engine", "echo", "--case", "echo", "--case", "throw")
	progress := res.stderr[:strings.Index(res.stderr, "sandbank:")]
	assert.Equal(t, "\r\x1b[K[echo 1/2] echo\r\x1b[K[echo 2/2] throw\r\x1b[K", progress)
	assert.NotContains(t, res.stdout, "\r")
}

func TestMatrixHelpCountsTheCases(t *testing.T) {
	res := cli(matrixApp(t), "", "matrix", "--help")
	assert.Contains(t, res.stdout, fmt.Sprintf("The kit's %d cases:", len(conformance.CaseNames())))
	for _, c := range conformance.CaseNames() {
		assert.Contains(t, res.stdout, c)
	}
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
	assert.Regexp(t, `(?m)^  nofixtures refused: conformance: `, res.stdout)
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
	require.Len(t, rows[1].Cases, 1, "only the case asked for runs")
	assert.Equal(t, conformance.StatusPass, rows[1].Cases["echo"].Status)

	res = cli(a, "", "matrix", "--case", "echo", "--json")
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows), res.stdout)
	require.Len(t, rows, 2, "without --engine, every engine runs")
	assert.Equal(t, "echo", rows[0].Engine, "sorted by name")
}
