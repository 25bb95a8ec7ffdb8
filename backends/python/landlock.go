//go:build linux

package python

import (
	_ "embed"

	"golang.org/x/sys/unix"
)

// confineSource is confine.py: the Landlock rules each run's process
// applies to itself (_confine, which the runner calls after its rlimits
// and before it reads the script).
//
//go:embed confine.py
var confineSource string

// sandboxSource is the program the sandbox's interpreter runs:
// confine.py's definitions, then the runner. The probe of the
// interpreter on the host runs the runner alone, which never confines
// itself there.
var sandboxSource = confineSource + "\n" + runnerSource

// unconfinedSource is sandboxSource without Landlock, for tests that show
// what it refuses.
var unconfinedSource = "def _confine():\n    return 0\n\n" + runnerSource

// program is the sandbox's program for b.
func (b *Backend) program() string {
	if b.noLandlock {
		return unconfinedSource
	}
	return sandboxSource
}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock
// (or with it disabled): what confine.py's _confine finds in the run.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// landlockScopesABI is the first Landlock ABI that scopes abstract UNIX
// sockets and signals to the domain that made them.
const landlockScopesABI = 6

// sharesNet reports whether b's zygote runs share its network namespace
// instead of making one each (zygote.py, NET): only where each run
// confines itself with Landlock's scopes, which keep one run from
// connecting to an abstract socket another made.
func (b *Backend) sharesNet() bool {
	return b.forceSharedNet || (!b.noLandlock && landlockABI() >= landlockScopesABI)
}
