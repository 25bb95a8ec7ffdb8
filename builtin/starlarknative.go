package builtin

import (
	"github.com/sandbank/sandbank/backends/starlarknative"
	"github.com/sandbank/sandbank/spi"
)

// nativeStarlark reports whether starlark-native can run here
// (starlarknative.Available): then it is registered as the default of
// "starlark"; elsewhere starlark-wasm is.
func nativeStarlark() bool { return starlarknative.Available() == nil }

// nativeStarlarkEngines lists starlark-native where it can run.
func nativeStarlarkEngines() []engine {
	if !nativeStarlark() {
		return nil
	}
	return []engine{{
		name:        starlarknative.Engine,
		factory:     func() (spi.Backend, error) { return starlarknative.New(nil) },
		declare:     func() spi.Capabilities { return starlarknative.Declare(nil) },
		description: nativeStarlarkDescription(),
		isDefault:   true,
	}}
}

// nativeStarlarkDescription is starlark-native's line in 'sandbank
// engines', saying why the memory limit is not declared where runs get
// no cgroup.
func nativeStarlarkDescription() string {
	const d = "go.starlark.net natively, a confined child process per run (namespaces, seccomp allow-list, Landlock, rlimits, spares started ahead): hard clock, step budget"
	if err := starlarknative.KernelBounds(); err != nil {
		return d + "; memory limit not declared: no cgroup for runs"
	}
	return d + ", memory cap (a cgroup per run)"
}
