package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/spi"
)

// moduleVersion returns the version of the main module the binary was
// built from: a release tag for "go install …@v1.2.3", "(devel)" for a
// build from a working tree or when the build information is missing.
func moduleVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil || info.Main.Version == "" {
		return "(devel)"
	}
	return info.Main.Version
}

// versionJSON is "sandbank version --json".
type versionJSON struct {
	Version string `json:"version"`
	SPI     string `json:"spi"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Cgo     bool   `json:"cgo"`
	// Commit, CommitTime and Modified come from the version control
	// information Go stamps into a binary built in a repository; they are
	// empty (false) without it, as in "go run" or a test binary.
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commitTime,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
}

// buildVersion describes this binary.
func buildVersion(info *debug.BuildInfo, ok bool) versionJSON {
	v := versionJSON{
		Version: moduleVersion(info, ok),
		SPI:     spi.Version,
		Go:      runtime.Version(),
		OS:      runtime.GOOS,
		Arch:    runtime.GOARCH,
		Cgo:     buildHasCgo,
	}
	if ok && info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the module and SPI versions and how the binary was built",
		Long: `version prints the version of the sandbank module the binary was built
from ("(devel)" for a build from a working tree), the version of the
backend service-provider interface (spi.Version) it implements, the Go
release that built it, whether cgo was on (quickjs-wasmtime needs it) and
the commit, when Go stamped one (a build inside the repository).

With --json, stdout is one object:
  {"version":"(devel)","spi":"1","go":"go1.26.1","os":"linux",
   "arch":"amd64","cgo":true,"commit":"1992d30…","commitTime":"…",
   "modified":false}`,
		Example: `  sandbank version
  sandbank --version
  sandbank version --json`,
		Args: cobra.NoArgs,
		RunE: wrap(func(*cobra.Command, []string) error {
			v := buildVersion(debug.ReadBuildInfo())
			if asJSON {
				return a.printJSON(v)
			}
			cgo := "off"
			if v.Cgo {
				cgo = "on"
			}
			commit := ""
			if v.Commit != "" {
				commit = "\ncommit " + v.Commit
				if v.Modified {
					commit += " (modified)"
				}
			}
			_, err := fmt.Fprintf(a.stdout, "sandbank %s\nspi %s\n%s %s/%s, cgo %s%s\n",
				v.Version, v.SPI, v.Go, v.OS, v.Arch, cgo, commit)
			return err
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object on stdout")
	return cmd
}
