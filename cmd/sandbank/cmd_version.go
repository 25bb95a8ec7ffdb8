package main

import (
	"fmt"
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

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and the backend SPI version",
		Long: `version prints the version of the sandbank module the binary was built
from ("(devel)" for a build from a working tree) and the version of the
backend service-provider interface (spi.Version) it implements.`,
		Example: `  sandbank version`,
		Args:    cobra.NoArgs,
		RunE: wrap(func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(a.stdout, "sandbank %s\nspi %s\n", moduleVersion(debug.ReadBuildInfo()), spi.Version)
			return err
		}),
	}
}
