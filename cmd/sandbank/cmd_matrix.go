package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// matrixRow is one engine's line of the matrix, and one element of
// "sandbank matrix --json".
type matrixRow struct {
	Engine       string                `json:"engine"`
	Language     string                `json:"language"`
	Capabilities spi.Capabilities      `json:"capabilities"`
	Cases        map[string]matrixCell `json:"cases"`
	// Proofs says, for each declared capability, which measurements proved
	// it (conformance.Report.Proofs).
	Proofs []conformance.Proof `json:"proofs,omitempty"`
	// Refused is the kit's refusal (or the reason the run stopped); when
	// it is set, Cases holds the cases that ran before it, if any.
	Refused string `json:"refused,omitempty"`
}

// matrixCell is one case's verdict.
type matrixCell struct {
	Status conformance.Status `json:"status"`
	Reason string             `json:"reason,omitempty"`
	// Evidence is what the case measured, with the bounds it was held to.
	Evidence []conformance.Figure `json:"evidence,omitempty"`
}

func (r *matrixRow) failed() bool {
	if r.Refused != "" {
		return true
	}
	for _, c := range r.Cases {
		if c.Status == conformance.StatusFail {
			return true
		}
	}
	return false
}

func (a *app) matrixCommand() *cobra.Command {
	var (
		engines, cases []string
		asJSON         bool
	)
	cmd := &cobra.Command{
		Use:   "matrix [--engine NAME]... [--json]",
		Short: "Run the conformance kit on every engine; print the verified matrix",
		Long: fmt.Sprintf(`matrix runs the conformance kit against every registered engine (or the
ones named with --engine), each with its language's fixture set, through
the Sandbank effect, and prints the verified matrix: one column per engine
(abbreviated, with a legend), one row per declared capability and per
case, each pass, FAIL or skip. The reason of every FAIL and skip follows
the table, then a summary line ("84 pass, 12 skip (declared), 0 fail").
The output fits 100 columns.

The kit's %d cases:
  %s

Progress ("[quickjs 3/%d] runaway_loop") goes to stderr: on a terminal one
line updated in place, otherwise one line per case. The table, or with
--json one JSON array, goes to stdout:
  [{"engine":"quickjs","language":"javascript","capabilities":{...},
    "cases":{"echo":{"status":"pass"},
             "cpu_budget":{"status":"skip","reason":"..."}}}]
An engine the kit refuses to run (no fixtures for its language, a
declaration it cannot accept) carries "refused" with the reason.

Exit status 1 when any case fails or any engine is refused, 130/143 when
SIGINT/SIGTERM stops it, else 0.`, len(conformance.CaseNames()), wrapList(conformance.CaseNames()), len(conformance.CaseNames())),
		Example: `  sandbank matrix
  sandbank matrix --engine quickjs --engine goja
  sandbank matrix --json > matrix.json
  sandbank matrix --engine starlark --case echo --case runaway_loop`,
		Args: cobra.NoArgs,
		RunE: wrap(func(cmd *cobra.Command, _ []string) error {
			return a.matrix(cmd.Context(), engines, cases, asJSON)
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&engines, "engine", nil, "run only engine `NAME` (repeatable)")
	f.StringArrayVar(&cases, "case", nil, "run only case `NAME` (repeatable; see the column names)")
	f.BoolVar(&asJSON, "json", false, "print one JSON array on stdout")
	_ = cmd.RegisterFlagCompletionFunc("engine", a.completeEngines)
	_ = cmd.RegisterFlagCompletionFunc("case", completeCases)
	return cmd
}

func (a *app) matrix(ctx context.Context, engineNames, caseNames []string, asJSON bool) error {
	all := conformance.CaseNames()
	for _, c := range caseNames {
		if !slices.Contains(all, c) {
			return usagef("unknown case %s (cases: %s)", quote(c), strings.Join(all, ", "))
		}
	}
	columns := all
	if len(caseNames) > 0 {
		columns = slices.DeleteFunc(slices.Clone(all), func(c string) bool { return !slices.Contains(caseNames, c) })
	}
	reg, err := a.registry()
	if err != nil {
		return err
	}
	var entries []registry.Entry
	if len(engineNames) == 0 {
		entries = reg.Engines()
	} else {
		for _, name := range engineNames {
			e, err := lookupEngine(reg, name)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(entries, func(x registry.Entry) bool { return x.Engine == name }) {
				entries = append(entries, e)
			}
		}
	}

	ctx, stop := cancelOnSignal(ctx)
	defer stop()

	prog := &progress{w: a.stderr, tty: a.isTerminal != nil && a.isTerminal(a.stderr)}
	rows := make([]*matrixRow, 0, len(entries))
	failed := 0
	for _, e := range entries {
		row := a.checkEngine(ctx, e, caseNames, prog)
		if row.failed() {
			failed++
		}
		rows = append(rows, row)
		if err := signalled(ctx, ctx.Err()); err != nil {
			prog.clear()
			return err
		}
	}
	prog.clear()

	if asJSON {
		if err := a.printJSON(rows); err != nil {
			return err
		}
	} else if err := printMatrix(a.stdout, rows, matrixColumns(columns, rows)); err != nil {
		return untyped(err)
	}
	if failed > 0 {
		return untyped(fmt.Errorf("matrix: %d of %d engines failed a case or were refused", failed, len(rows)))
	}
	return nil
}

// checkEngine runs the kit on one engine.
func (a *app) checkEngine(ctx context.Context, e registry.Entry, caseNames []string, prog *progress) *matrixRow {
	row := &matrixRow{Engine: e.Engine, Language: e.Language, Capabilities: e.Capabilities, Cases: map[string]matrixCell{}}
	opts := &conformance.Options{
		Cases:    caseNames,
		Progress: func(name string, i, n int) { prog.step(e.Engine, name, i, n) },
	}
	if set, ok := a.fixtures(e.Language); ok {
		opts.Fixtures = set
	}
	if a.cpuBudget != nil {
		opts.CPUBudget = a.cpuBudget(e.Engine)
	}
	if a.matrixOptions != nil {
		a.matrixOptions(opts)
	}
	rep, err := conformance.Check(ctx, e.Factory, opts)
	if rep != nil {
		row.Capabilities = rep.Capabilities
		row.Proofs = rep.Proofs
		for _, c := range rep.Cases {
			row.Cases[c.Name] = matrixCell{Status: c.Status, Reason: oneLine(c.Reason), Evidence: c.Evidence}
		}
	}
	if err != nil {
		row.Refused = oneLine(err.Error())
		prog.note("[%s] refused: %s", e.Engine, row.Refused)
	}
	return row
}

// cellText is a case's cell: pass, FAIL, skip, or "-" when it did not run.
func cellText(r *matrixRow, name string) string {
	cell, ok := r.Cases[name]
	switch {
	case !ok:
		return "-"
	case cell.Status == conformance.StatusFail:
		return "FAIL"
	default:
		return string(cell.Status)
	}
}

// maxReasonRunes bounds a reason in the table; --json carries it whole.
const maxReasonRunes = 300

// shorten cuts a long reason for the table.
func shorten(s string) string {
	r := []rune(s)
	if len(r) <= maxReasonRunes {
		return s
	}
	return string(r[:maxReasonRunes]) + "… (see --json)"
}

// wrapList joins names with ", ", breaking lines at about 72 columns
// with a two-space indent, for help texts.
func wrapList(names []string) string {
	var b strings.Builder
	col := 2
	for i, n := range names {
		if i > 0 {
			b.WriteString(",")
			col++
			if col+len(n)+1 > 72 {
				b.WriteString("\n  ")
				col = 2
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString(n)
		col += len(n)
	}
	return b.String()
}
