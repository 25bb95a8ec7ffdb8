//go:build linux

package python

import _ "embed"

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
