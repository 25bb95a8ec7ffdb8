package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"

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
	// Refused is the kit's refusal (or the reason the run stopped); when
	// it is set, Cases holds the cases that ran before it, if any.
	Refused string `json:"refused,omitempty"`
}

// matrixCell is one case's verdict.
type matrixCell struct {
	Status conformance.Status `json:"status"`
	Reason string             `json:"reason,omitempty"`
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
		Short: "Run the conformance kit on every engine and print the verified matrix",
		Long: `matrix runs the conformance kit against every registered engine (or the
ones named with --engine), each with its language's fixture set, through
the Sandbank effect, and prints the verified matrix: one row per engine
with its declared capabilities and, per case, pass, FAIL or skip. The
reason of every FAIL and skip follows the table.

Progress ("[quickjs 3/17] runaway_loop") goes to stderr; the table, or
with --json one JSON array, goes to stdout:
  [{"engine":"quickjs","language":"javascript","capabilities":{...},
    "cases":{"echo":{"status":"pass"},
             "cpu_budget":{"status":"skip","reason":"..."}}}]
An engine the kit refuses to run (no fixtures for its language, a
declaration it cannot accept) carries "refused" with the reason.

Exit status 1 when any case fails or any engine is refused, else 0.`,
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
	return cmd
}

func (a *app) matrix(ctx context.Context, engineNames, caseNames []string, asJSON bool) error {
	all := conformance.CaseNames()
	for _, c := range caseNames {
		if !slices.Contains(all, c) {
			return usagef("unknown case %q (cases: %s)", c, strings.Join(all, ", "))
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
			e, err := reg.Lookup(name)
			if err != nil {
				return usagef("%v", err)
			}
			if !slices.ContainsFunc(entries, func(x registry.Entry) bool { return x.Engine == name }) {
				entries = append(entries, e)
			}
		}
	}

	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	rows := make([]*matrixRow, 0, len(entries))
	failed := 0
	for _, e := range entries {
		row := a.checkEngine(ctx, e, caseNames)
		if row.failed() {
			failed++
		}
		rows = append(rows, row)
	}

	if asJSON {
		if err := a.printJSON(rows); err != nil {
			return err
		}
	} else if err := printMatrix(a, rows, columns); err != nil {
		return untyped(err)
	}
	if failed > 0 {
		return untyped(fmt.Errorf("matrix: %d of %d engines failed a case or were refused", failed, len(rows)))
	}
	return nil
}

// checkEngine runs the kit on one engine.
func (a *app) checkEngine(ctx context.Context, e registry.Entry, caseNames []string) *matrixRow {
	row := &matrixRow{Engine: e.Engine, Language: e.Language, Capabilities: e.Capabilities, Cases: map[string]matrixCell{}}
	opts := &conformance.Options{
		Cases: caseNames,
		Progress: func(name string, i, n int) {
			fmt.Fprintf(a.stderr, "[%s %d/%d] %s\n", e.Engine, i, n, name)
		},
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
		for _, c := range rep.Cases {
			row.Cases[c.Name] = matrixCell{Status: c.Status, Reason: oneLine(c.Reason)}
		}
	}
	if err != nil {
		row.Refused = oneLine(err.Error())
		fmt.Fprintf(a.stderr, "[%s] refused: %s\n", e.Engine, row.Refused)
	}
	return row
}

// printMatrix writes the table, then the reason of every FAIL, skip and
// refusal.
func printMatrix(a *app, rows []*matrixRow, columns []string) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "ENGINE\tLANGUAGE\tNETWORK\tWALLCLOCK\tMEMORY\tCPU\tFRESH")
	for _, c := range columns {
		fmt.Fprint(tw, "\t", c)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		c := r.Capabilities
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", r.Engine, r.Language, c.Network, c.WallClock,
			yesNo(c.Memory), yesNo(c.CPU), yesNo(c.FreshPerRun))
		for _, name := range columns {
			fmt.Fprint(tw, "\t", cellText(r, name))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	var reasons [][3]string
	for _, r := range rows {
		if r.Refused != "" {
			reasons = append(reasons, [3]string{r.Engine, "(refused)", r.Refused})
		}
		for _, name := range columns {
			cell, ok := r.Cases[name]
			if ok && cell.Status != conformance.StatusPass {
				reasons = append(reasons, [3]string{r.Engine, name, cellText(r, name) + ": " + shorten(cell.Reason)})
			}
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	fmt.Fprintln(a.stdout)
	fmt.Fprintln(a.stdout, "Reasons:")
	tw = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, r := range reasons {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r[0], r[1], r[2])
	}
	return tw.Flush()
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
