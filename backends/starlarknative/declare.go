package starlarknative

import (
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/spi"
)

// Engine is the engine name this backend registers under.
const Engine = "starlark-native"

// Language is the script language this backend runs: the in-process
// engine's, with the same fixtures.
const Language = starlark.Language

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one. They do not depend on opts.
//
// The backend declares no network (a network namespace with no interface,
// no socket call, Landlock), a hard wall clock (the child is killed), the
// memory limit only where each run gets its own cgroup ([KernelBounds]:
// the Go runtime's limit and RLIMIT_AS alone are backstops, not a cap),
// the step budget as the CPU limit, a new process per run (a spare child
// holds nothing of any run), host calls and logs.
func Declare(*Options) spi.Capabilities {
	return spi.Capabilities{
		Language:    Language,
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockHard,
		Memory:      KernelBounds() == nil,
		CPU:         true,
		FreshPerRun: true,
		HostCalls:   true,
		Logs:        true,
		Files:       true, // the files module, relayed to the host (wasmguest's files.go)
	}
}
