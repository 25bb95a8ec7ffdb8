package starlarknative

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spareFor returns a spare of b, taken out of its pool (the caller
// discards it).
func spareFor(t *testing.T, b *Backend) *spare {
	t.Helper()
	sp, err := b.spares.take()
	require.NoError(t, err)
	t.Cleanup(sp.discard)
	return sp
}

// procStatus reads the fields of /proc/PID/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// TestSpareIsConfined: a spare, read from outside before it reads any
// byte of a run, is in namespaces of its own (and a user namespace, or
// nobody when the host is root), holds no capability, has
// no new privileges, runs under a seccomp filter, holds no descriptor
// past stdio, and has its rlimits.
func TestSpareIsConfined(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	defer b.Close()
	sp := spareFor(t, b)
	pid := sp.c.cmd.Process.Pid

	namespaces := []string{"pid", "mnt", "ipc", "uts", "net"}
	if os.Geteuid() != 0 {
		namespaces = append(namespaces, "user") // a root host starts it as nobody instead
	}
	for _, ns := range namespaces {
		ours, err := os.Readlink("/proc/self/ns/" + ns)
		require.NoError(t, err)
		its, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		require.NoError(t, err)
		assert.NotEqual(t, ours, its, "the child has a %s namespace of its own", ns)
	}

	st := procStatus(t, pid)
	for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		assert.Equal(t, "0000000000000000", st[c], "%s of the child", c)
	}
	assert.Equal(t, "1", st["NoNewPrivs"])
	assert.Equal(t, "2", st["Seccomp"], "a seccomp filter (mode 2)")
	if os.Geteuid() == 0 {
		assert.Equal(t, "65534\t65534\t65534\t65534", st["Uid"], "a root host's child is nobody")
		assert.Equal(t, "65534\t65534\t65534\t65534", st["Gid"], "a root host's child is nobody")
		assert.Empty(t, st["Groups"], "and in no supplementary group")
	}

	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	var names []string
	for _, fd := range fds {
		names = append(names, fd.Name())
	}
	assert.ElementsMatch(t, []string{"0", "1", "2"}, names, "only stdio")

	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	require.NoError(t, err)
	assert.Regexp(t, `Max open files\s+16\s+16`, string(limits))
	assert.Regexp(t, `Max core file size\s+0\s+0`, string(limits))
	assert.Regexp(t, `Max file size\s+0\s+0`, string(limits))
}

// TestSpareIsInItsGroup: where runs get cgroups, a spare already sits in
// a group of its own, bounded for a run of the default memory limit.
func TestSpareIsInItsGroup(t *testing.T) {
	if err := KernelBounds(); err != nil {
		t.Skip(err)
	}
	b, err := New(nil)
	require.NoError(t, err)
	defer b.Close()
	sp := spareFor(t, b)
	require.NotNil(t, sp.g)
	for _, d := range sp.g.Dirs() {
		procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(sp.c.cmd.Process.Pid), strings.TrimSpace(string(procs)))
	}
	assert.Equal(t, DefaultMemoryBytes, sp.memoryBytes)
}
