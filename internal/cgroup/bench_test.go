//go:build linux

package cgroup_test

import (
	"os/exec"
	"testing"

	"github.com/sandbank/sandbank/internal/cgroup"
)

// BenchmarkGroup is a run's group's whole life around /bin/true: create,
// limit, start in it, wait, read the events, remove. BenchmarkNoGroup is
// /bin/true alone, for the difference.
func BenchmarkGroup(b *testing.B) {
	m, err := cgroup.Default()
	if err != nil {
		b.Skipf("no group can be created here: %v", err)
	}
	for b.Loop() {
		g, err := m.New(cgroup.Limits{MemoryBytes: 64 << 20, Tasks: 8})
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("/bin/true")
		if err := g.Start(cmd); err != nil {
			b.Fatal(err)
		}
		_ = cmd.Wait()
		if _, err := g.MemoryEvents(); err != nil {
			b.Fatal(err)
		}
		if err := g.Remove(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNoGroup(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
