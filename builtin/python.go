package builtin

import (
	"strings"
	"time"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/spi"
)

// Unavailable is a built-in engine that [Register] leaves out on this
// machine, and why.
type Unavailable struct {
	Engine   string `json:"engine"`
	Language string `json:"language"`
	// Reason says what is missing; it starts with the backend's package
	// name ("python: bubblewrap (bwrap) is not installed: …").
	Reason string `json:"reason"`
}

// Missing lists the built-in engines Register leaves out on this machine
// because it lacks what they need (python: Linux, bubblewrap, python3 and
// user namespaces), each with the reason; nil when none is missing. The
// engines that need cgo, left out of a build without it, are not listed
// (the command line words that case itself).
func Missing() []Unavailable {
	if err := python.Available(nil); err != nil {
		return []Unavailable{{Engine: python.Engine, Language: python.Language, Reason: err.Error()}}
	}
	return nil
}

// machineEngines lists the built-in backends that need something of the
// machine, and are registered only where it has it: python, CPython in a
// Linux sandbox (the language's default).
func machineEngines() []engine {
	if python.Available(nil) != nil {
		return nil
	}
	return []engine{{
		name:        python.Engine,
		factory:     func() (spi.Backend, error) { return python.New(nil) },
		declare:     func() spi.Capabilities { return python.Declare(nil) },
		description: pythonDescription(),
		isDefault:   true,
	}}
}

// pythonDescription is python's line in 'sandbank engines': what bounds
// a run here, and why the memory limit is not declared where runs get no
// cgroup.
func pythonDescription() string {
	const d = "CPython (the system's python3), a new process per run in a Linux sandbox, forked from a pre-started interpreter (a zygote) where bubblewrap may grant CAP_SYS_ADMIN inside the sandbox's user namespace, else started by bubblewrap for the run (namespaces, seccomp allow-list, Landlock, rlimits"
	if err := python.KernelBounds(); err != nil {
		return d + "); memory limit not declared: " + strings.TrimPrefix(err.Error(), "python: ")
	}
	return d + ", a cgroup per run)"
}

// pythonCPUBudget is the CPU budget of python's [CPUBudgetFactory]: half
// a second of CPU, interpreter start-up (about 50 ms) included, so that
// the conformance kit's loop runs out of it quickly even on a loaded
// machine, where a second of CPU takes several of wall time.
const pythonCPUBudget = 500 * time.Millisecond

// machineCPUBudgetFactory is CPUBudgetFactory for the machine's engines.
func machineCPUBudgetFactory(engine string) spi.Factory {
	if engine == python.Engine {
		return func() (spi.Backend, error) { return python.New(&python.Options{CPUTime: pythonCPUBudget}) }
	}
	return nil
}

// machineCacheFactory is CacheFactory for the machine's engines: python
// keeps its check of the machine (the probe and the self-test) in dir.
func machineCacheFactory(engine, dir string) spi.Factory {
	if engine == python.Engine {
		return func() (spi.Backend, error) { return python.New(&python.Options{CacheDir: dir, NoCache: dir == ""}) }
	}
	return nil
}

// PackagesFactory returns a factory of the named built-in engine that
// lets scripts import the allow-listed packages (python's
// Options.Packages: packages of the system's site directories, such as
// numpy, pandas and matplotlib), keeping its check of the machine as
// [CacheFactory] does in dir, or in the default directory when dir is
// empty and noCache false. It returns nil for an engine that takes no
// packages: every engine but python.
func PackagesFactory(engine string, packages []string, dir string, noCache bool) spi.Factory {
	if engine != python.Engine || python.Available(nil) != nil {
		return nil
	}
	packages = append([]string(nil), packages...)
	return func() (spi.Backend, error) {
		return python.New(&python.Options{Packages: packages, CacheDir: dir, NoCache: noCache})
	}
}
