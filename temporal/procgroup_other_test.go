//go:build !unix

package temporal

import (
	"os"
	"os/exec"
)

// ownGroup does nothing where there are no Unix process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills p only.
func killGroup(p *os.Process) error { return p.Kill() }
