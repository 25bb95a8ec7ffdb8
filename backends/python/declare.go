package python

import "github.com/sandbank/sandbank/spi"

// Language is the language name this backend declares.
const Language = "python"

// Engine is the backend's engine name in a registry.
const Engine = "python"

// Declare returns the capabilities a backend built by New(opts) declares
// (its Capabilities method returns exactly this), computed without
// building one. They do not depend on opts. New refuses to build a backend
// on a machine that cannot honour them; [Available] says, cheaply, whether
// it may.
//
// The backend declares no network (a network namespace with no interface
// up, and sockets other than AF_UNIX refused), a hard wall clock (the
// process group is killed), the memory limit only where each run gets
// its own cgroup ([KernelBounds]; an address-space rlimit alone is not
// the memory limit: kernel-held memory escapes it), a CPU budget
// (RLIMIT_CPU), a new process per run, host calls, logs and files (input
// files in the working directory, output files under out/: files.go).
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
		Files:       true,
	}
}
