package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/sandbank/sandbank/conformance"
)

// tableWidth is the width the conformance matrix fits in.
const tableWidth = 100

// plainWidth is the width help and the bench table fit in when they do not
// go to a terminal.
const plainWidth = 80

// width returns the width the help and the bench table written to w fit
// in: the terminal's (at least 40 columns) when w is one, else plainWidth.
func (a *app) width(w io.Writer) int {
	if a.isTerminal != nil && a.isTerminal(w) {
		if f, ok := w.(*os.File); ok {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols >= 40 {
				return cols
			}
		}
	}
	return plainWidth
}

// wrapHelp makes root's help and usage, and those of every command under
// it, wrap the flags' descriptions to width.
func wrapHelp(root interface {
	UsageTemplate() string
	SetUsageTemplate(string)
}, width int) {
	t := root.UsageTemplate()
	for _, set := range []string{".LocalFlags", ".InheritedFlags"} {
		t = strings.ReplaceAll(t, set+".FlagUsages", fmt.Sprintf("(%s.FlagUsagesWrapped %d)", set, width))
	}
	root.SetUsageTemplate(t)
}

// writeFitted writes a table, its cells aligned right, in width columns:
// when its columns do not fit side by side it is written as several
// tables, one after the other, each repeating the first column (the row's
// name).
func writeFitted(w io.Writer, width int, head []string, rows [][]string) error {
	colWidth := make([]int, len(head))
	for i, h := range head {
		colWidth[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(colWidth) {
				colWidth[i] = max(colWidth[i], utf8.RuneCountInString(c))
			}
		}
	}
	const gap = 2
	for start := 1; start < len(head); {
		end, used := start, colWidth[0]
		for end < len(head) && (end == start || used+gap+colWidth[end] <= width) {
			used += gap + colWidth[end]
			end++
		}
		if start > 1 {
			fmt.Fprintln(w)
		}
		tw := tabwriter.NewWriter(w, 0, 4, gap, ' ', tabwriter.AlignRight)
		cols := append([]int{0}, seq(start, end)...)
		for _, r := range append([][]string{head}, rows...) {
			var b strings.Builder
			for _, i := range cols {
				if i < len(r) {
					b.WriteString(r[i])
				}
				b.WriteString("\t")
			}
			fmt.Fprintln(tw, b.String())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// shortNames abbreviates the built-in engines' names in the matrix's
// column heads; any other engine gets a name from abbreviate.
var shortNames = map[string]string{
	"quickjs":             "qjs",
	"quickjs-fresh":       "qjs-f",
	"quickjs-wasmtime":    "qjs-wt",
	"quickjs-ts":          "qjs-ts",
	"quickjs-fresh-ts":    "qjsf-ts",
	"quickjs-wasmtime-ts": "qwt-ts",
	"starlark":            "star",
	"starlark-wasm":       "star-w",
	"starlark-native":     "star-n",
}

// maxLabel is the widest engine column head.
const maxLabel = 7

// engineLabels returns one distinct short column head per engine.
func engineLabels(engines []string) []string {
	labels := make([]string, len(engines))
	used := map[string]bool{}
	for i, e := range engines {
		l := abbreviate(e)
		for n := 2; used[l]; n++ {
			suffix := fmt.Sprint(n)
			l = truncate(abbreviate(e), maxLabel-len(suffix)) + suffix
		}
		used[l] = true
		labels[i] = l
	}
	return labels
}

func abbreviate(engine string) string {
	if s, ok := shortNames[engine]; ok {
		return s
	}
	return truncate(engine, maxLabel)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// summary counts the verdicts of rows over columns.
type summary struct{ pass, skip, fail, notRun, refused int }

func summarize(rows []*matrixRow, columns []string) summary {
	var s summary
	for _, r := range rows {
		if r.Refused != "" {
			s.refused++
		}
		for _, c := range columns {
			cell, ok := r.Cases[c]
			switch {
			case !ok:
				s.notRun++
			case cell.Status == conformance.StatusPass:
				s.pass++
			case cell.Status == conformance.StatusSkip:
				s.skip++
			default:
				s.fail++
			}
		}
	}
	return s
}

func (s summary) String() string {
	out := fmt.Sprintf("%d pass, %d skip (declared), %d fail", s.pass, s.skip, s.fail)
	if s.refused > 0 {
		out += fmt.Sprintf(", %d engine(s) refused", s.refused)
	}
	if s.notRun > 0 {
		out += fmt.Sprintf(", %d not run", s.notRun)
	}
	return out
}

// printMatrix writes the matrix transposed, so that it fits tableWidth
// whatever the number of cases: one row per declared capability, then one
// row per case, one column per engine (abbreviated, with a legend); the
// engines are split over several tables when they do not fit side by
// side. Then the reason of every FAIL, skip and refusal, grouped where
// engines share one, and the summary line.
func printMatrix(w io.Writer, rows []*matrixRow, columns []string) error {
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Engine
	}
	labels := engineLabels(names)
	first := 0
	for _, c := range columns {
		first = max(first, len(c))
	}
	first = max(first, len("wall clock"))
	perEngine := maxLabel + 2
	fit := max(1, (tableWidth-first-2)/perEngine)
	for start := 0; start < len(rows); start += fit {
		end := min(start+fit, len(rows))
		if start > 0 {
			fmt.Fprintln(w)
		}
		if err := printMatrixPart(w, rows[start:end], labels[start:end], columns); err != nil {
			return err
		}
	}

	fmt.Fprintln(w)
	var legend []string
	for i, r := range rows {
		legend = append(legend, fmt.Sprintf("%s = %s (%s)", labels[i], r.Engine, r.Language))
	}
	writeWrapped(w, "Engines: ", strings.Join(legend, ", "))

	type reason struct{ what, text string }
	var reasons []reason
	for _, r := range rows {
		if r.Refused != "" {
			reasons = append(reasons, reason{r.Engine + " refused", r.Refused})
		}
	}
	for _, c := range columns {
		// Engines that share a verdict and a reason share one entry.
		var keys []string
		groups := map[string][]string{}
		for _, r := range rows {
			cell, ok := r.Cases[c]
			if !ok || cell.Status == conformance.StatusPass {
				continue
			}
			key := cellText(r, c) + ": " + shorten(cell.Reason)
			if _, seen := groups[key]; !seen {
				keys = append(keys, key)
			}
			groups[key] = append(groups[key], r.Engine)
		}
		for _, k := range keys {
			reasons = append(reasons, reason{c + " on " + strings.Join(groups[k], ", "), k})
		}
	}
	if len(reasons) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Reasons:")
		for _, r := range reasons {
			writeWrapped(w, "  ", r.what+": "+r.text)
		}
	}
	fmt.Fprintln(w)
	_, err := fmt.Fprintln(w, summarize(rows, columns))
	return err
}

func printMatrixPart(w io.Writer, rows []*matrixRow, labels []string, columns []string) error {
	tw := newTable(w)
	line := func(head string, cell func(r *matrixRow) string) {
		fmt.Fprint(tw, head)
		for _, r := range rows {
			fmt.Fprint(tw, "\t", cell(r))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "")
	for _, l := range labels {
		fmt.Fprint(tw, "\t", l)
	}
	fmt.Fprintln(tw)
	line("network", func(r *matrixRow) string { return r.Capabilities.Network.String() })
	line("wall clock", func(r *matrixRow) string { return r.Capabilities.WallClock.String() })
	line("memory", func(r *matrixRow) string { return yesNo(r.Capabilities.Memory) })
	line("cpu", func(r *matrixRow) string { return yesNo(r.Capabilities.CPU) })
	line("fresh", func(r *matrixRow) string { return yesNo(r.Capabilities.FreshPerRun) })
	line("host calls", func(r *matrixRow) string { return yesNo(r.Capabilities.HostCalls) })
	line("", func(*matrixRow) string { return "" })
	for _, c := range columns {
		line(c, func(r *matrixRow) string { return cellText(r, c) })
	}
	return tw.Flush()
}

// table is a tabwriter whose lines lose their trailing blanks.
type table struct {
	*tabwriter.Writer
	buf bytes.Buffer
	out io.Writer
}

func newTable(w io.Writer) *table {
	t := &table{out: w}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 4, 2, ' ', 0)
	return t
}

// Flush writes the aligned lines, without trailing blanks.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(t.out, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	t.buf.Reset()
	return nil
}

// matrixColumns returns the cases to show: those asked for, in
// CaseNames order, then any other case a report has (a kit newer than
// this command line), sorted.
func matrixColumns(asked []string, rows []*matrixRow) []string {
	columns := slices.Clone(asked)
	var extra []string
	for _, r := range rows {
		for name := range r.Cases {
			if !slices.Contains(columns, name) && !slices.Contains(extra, name) {
				extra = append(extra, name)
			}
		}
	}
	slices.Sort(extra)
	return append(columns, extra...)
}

// writeWrapped writes prefix and text wrapped to tableWidth, the
// following lines indented by four spaces.
func writeWrapped(w io.Writer, prefix, text string) { writeWrappedTo(w, tableWidth, prefix, text) }

// writeWrappedTo writes prefix and text wrapped to width, the following
// lines indented by four spaces.
func writeWrappedTo(w io.Writer, width int, prefix, text string) {
	line := prefix
	fresh := true // nothing but the prefix or indent on the line yet
	for _, word := range strings.Fields(text) {
		if !fresh && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			fmt.Fprintln(w, line)
			line, fresh = "    ", true
		}
		if fresh {
			line += word
			fresh = false
		} else {
			line += " " + word
		}
	}
	fmt.Fprintln(w, line)
}
