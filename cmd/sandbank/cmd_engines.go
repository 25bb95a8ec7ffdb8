package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/pool"
)

// engineJSON is one element of "sandbank engines --json": every door's
// description of an engine.
type engineJSON = pool.Description

func (a *app) enginesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "engines",
		Short: "List the registered engines and their declared capabilities",
		Long: `engines lists every registered engine: its language, whether it is the
language's default, and the capabilities its backend declares. A
declaration is a claim; 'sandbank matrix' checks it.

With --json, stdout is one JSON array:
  [{"engine":"quickjs","language":"javascript","default":true,
    "capabilities":{"language":"javascript","network":"none",...},
    "description":"..."}]`,
		Example: `  sandbank engines
  sandbank engines --json`,
		Args: cobra.NoArgs,
		RunE: wrap(func(*cobra.Command, []string) error {
			reg, err := a.registry()
			if err != nil {
				return err
			}
			p, err := pool.New(reg, nil)
			if err != nil {
				return err
			}
			defer p.Close()
			rows := p.Describe()
			if asJSON {
				return a.printJSON(rows)
			}
			if err := printEngines(a.stdout, rows); err != nil {
				return err
			}
			return a.printMissing(a.stdout)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON array on stdout")
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// printEngines writes the engines as a table that fits tableWidth, the
// descriptions after it.
func printEngines(w io.Writer, rows []engineJSON) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ENGINE\tLANGUAGE\tDEFAULT\tNETWORK\tWALLCLOCK\tMEMORY\tCPU\tFRESH")
	for _, r := range rows {
		c := r.Capabilities
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Engine, r.Language, yesNo(r.Default),
			c.Network, c.WallClock, yesNo(c.Memory), yesNo(c.CPU), yesNo(c.FreshPerRun))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	first := true
	for _, r := range rows {
		if r.Description == "" {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		writeWrapped(w, r.Engine+": ", r.Description)
	}
	return nil
}

// printMissing writes the built-in engines this machine cannot run, and
// why, after the table.
func (a *app) printMissing(w io.Writer) error {
	if a.missing == nil {
		return nil
	}
	list := a.missing()
	if len(list) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Not available on this machine:")
	for _, m := range list {
		writeWrapped(w, m.Engine+": ", strings.TrimPrefix(m.Reason, m.Engine+": "))
	}
	return nil
}
