package main

import (
	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// addPackageFlag adds --package, which run, serve and mcp share.
func addPackageFlag(cmd *cobra.Command, packages *[]string) {
	cmd.Flags().StringArrayVar(packages, "package", nil, "let python scripts import the system's package `NAME` (numpy, pandas, matplotlib: Debian's python3-NAME), preloaded (repeatable)")
}

// packagesFactory is the factory of entry's engine with the allow-listed
// packages; an engine that takes none is a usage error.
func packagesFactory(entry registry.Entry, packages []string, cacheDir string, noCache bool) (spi.Factory, error) {
	f := builtin.PackagesFactory(entry.Engine, packages, cacheDir, noCache)
	if f == nil {
		return nil, usagef("--package: the %s engine takes no packages (only python does)", entry.Engine)
	}
	return f, nil
}

// tenantPackages builds python with a tenant's packages (the tenants
// document's "packages"; pool.Options.Packages) for serve and mcp,
// keeping its check of the machine as packagesFactory does.
func tenantPackages(cacheDir string, noCache bool) func(registry.Entry, []string) spi.Factory {
	return func(e registry.Entry, packages []string) spi.Factory {
		return builtin.PackagesFactory(e.Engine, packages, cacheDir, noCache)
	}
}

// withPackages returns reg with python built with the allow-listed
// packages (reg itself without any): the same entries and defaults, python's
// factory replaced.
func withPackages(reg *registry.Registry, packages []string) (*registry.Registry, error) {
	if len(packages) == 0 {
		return reg, nil
	}
	out := registry.New()
	found := false
	for _, e := range reg.Engines() {
		if f := builtin.PackagesFactory(e.Engine, packages, "", false); f != nil {
			e.Factory, found = f, true
		}
		out.Register(e)
	}
	if !found {
		return nil, usagef("--package: no engine here takes packages (python is not available: see 'sandbank engines')")
	}
	for _, lang := range reg.Languages() {
		if d, err := reg.Default(lang); err == nil {
			if err := out.SetDefault(lang, d.Engine); err != nil {
				return nil, untyped(err)
			}
		}
	}
	return out, nil
}
