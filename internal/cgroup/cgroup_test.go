//go:build linux

package cgroup_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/cgroup"
)

// managerOrSkip opens version v, or skips with Open's reason.
func managerOrSkip(t *testing.T, v cgroup.Version) *cgroup.Manager {
	t.Helper()
	m, err := cgroup.Open(&cgroup.Options{Version: v})
	if err != nil {
		t.Skipf("no %s group can be created here: %v", v, err)
	}
	require.Equal(t, v, m.Version())
	return m
}

func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	return p
}

func eachVersion(t *testing.T, f func(t *testing.T, m *cgroup.Manager)) {
	for _, v := range []cgroup.Version{cgroup.V1, cgroup.V2} {
		t.Run(v.String(), func(t *testing.T) { f(t, managerOrSkip(t, v)) })
	}
}

// TestStartPlacesTheChild: the child is in the group from its first
// instruction (it reads its own /proc/self/cgroup), and Remove leaves
// nothing.
func TestStartPlacesTheChild(t *testing.T) {
	eachVersion(t, func(t *testing.T, m *cgroup.Manager) {
		g, err := m.New(cgroup.Limits{MemoryBytes: 64 << 20, Tasks: 8})
		require.NoError(t, err)
		cmd := exec.Command("/bin/cat", "/proc/self/cgroup")
		var out bytes.Buffer
		cmd.Stdout = &out
		require.NoError(t, g.Start(cmd))
		require.NoError(t, cmd.Wait())
		for _, d := range g.Dirs() {
			assert.Contains(t, out.String(), filepath.Base(d))
		}
		// This process's own thread went back home.
		self, err := os.ReadFile("/proc/self/cgroup")
		require.NoError(t, err)
		assert.NotContains(t, string(self), filepath.Base(g.Dirs()[0]))
		require.NoError(t, g.Remove())
		for _, d := range g.Dirs() {
			assert.NoDirExists(t, d)
		}
	})
}

// TestMemoryLimitIsObservedFromOutside: a process that touches more than
// the group's memory is killed by the kernel, and the host reads it in
// the group's events; one that fits is not.
func TestMemoryLimitIsObservedFromOutside(t *testing.T) {
	py := python(t)
	eachVersion(t, func(t *testing.T, m *cgroup.Manager) {
		run := func(mib int) (*cgroup.Group, error) {
			g, err := m.New(cgroup.Limits{MemoryBytes: 48 << 20, Tasks: 8})
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, g.Remove()) })
			// An anonymous shared mapping (shmem pages), touched page by page.
			cmd := exec.Command(py, "-c", "import mmap,sys\nn=int(sys.argv[1])<<20\nm=mmap.mmap(-1,n)\nfor i in range(0,n,4096): m[i]=1", strconv.Itoa(mib))
			require.NoError(t, g.Start(cmd))
			return g, cmd.Wait()
		}
		g, err := run(8)
		require.NoError(t, err)
		e, err := g.MemoryEvents()
		require.NoError(t, err)
		assert.False(t, g.OOMKilled(), "%+v", e)
		assert.Greater(t, e.PeakBytes, int64(8<<20))

		g, err = run(256)
		require.Error(t, err, "256 MiB touched in a 48 MiB group")
		e, err = g.MemoryEvents()
		require.NoError(t, err)
		assert.True(t, g.OOMKilled(), "%+v", e)
		assert.LessOrEqual(t, e.PeakBytes, int64(48<<20))
	})
}

// TestTasksAreBounded: pids.max refuses the fork past the bound, root or
// not, and the host counts the refusals.
func TestTasksAreBounded(t *testing.T) {
	py := python(t)
	eachVersion(t, func(t *testing.T, m *cgroup.Manager) {
		g, err := m.New(cgroup.Limits{MemoryBytes: 256 << 20, Tasks: 4})
		require.NoError(t, err)
		defer func() { assert.NoError(t, g.Remove()) }()
		cmd := exec.Command(py, "-c", `
import threading
ev = threading.Event()
n = 0
try:
    for _ in range(64):
        threading.Thread(target=ev.wait).start()
        n += 1
except RuntimeError:
    pass
ev.set()
print(n)`)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		require.NoError(t, g.Start(cmd))
		require.NoError(t, cmd.Wait(), stderr.String())
		assert.Equal(t, "3", strings.TrimSpace(out.String()), "the process and 3 threads")
		e, err := g.MemoryEvents()
		require.NoError(t, err)
		assert.NotZero(t, e.TasksRefused)
	})
}

// TestRemoveKillsWhatIsLeft: a group whose process still runs is emptied
// and removed.
func TestRemoveKillsWhatIsLeft(t *testing.T) {
	eachVersion(t, func(t *testing.T, m *cgroup.Manager) {
		g, err := m.New(cgroup.Limits{Tasks: 8})
		require.NoError(t, err)
		cmd := exec.Command("/bin/sleep", "1000")
		require.NoError(t, g.Start(cmd))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		require.NoError(t, g.Remove())
		require.Error(t, <-done)
		for _, d := range g.Dirs() {
			assert.NoDirExists(t, d)
		}
	})
}

// TestOpenSweepsWhatTheDeadLeft: a group named after a process that has
// ended (a host that died mid-run) is removed by the next Open; one named
// after a live process is not.
func TestOpenSweepsWhatTheDeadLeft(t *testing.T) {
	eachVersion(t, func(t *testing.T, m *cgroup.Manager) {
		dead := exec.Command("/bin/true")
		require.NoError(t, dead.Run())
		live := exec.Command("/bin/sleep", "1000")
		require.NoError(t, live.Start())
		defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
		var left, kept []string
		for _, p := range m.Parents() {
			d := filepath.Join(p, "sandbank-"+strconv.Itoa(dead.Process.Pid)+"-1")
			require.NoError(t, os.Mkdir(d, 0o755))
			left = append(left, d)
			k := filepath.Join(p, "sandbank-"+strconv.Itoa(live.Process.Pid)+"-1")
			require.NoError(t, os.Mkdir(k, 0o755))
			kept = append(kept, k)
		}
		defer func() {
			for _, k := range kept {
				_ = os.Remove(k)
			}
		}()
		_, err := cgroup.Open(&cgroup.Options{Version: m.Version()})
		require.NoError(t, err)
		for _, d := range left {
			assert.NoDirExists(t, d)
		}
		for _, k := range kept {
			assert.DirExists(t, k)
		}
	})
}

// TestPlaceMovesAProcess: a process started elsewhere and placed in the
// group is in it (its /proc/PID/cgroup names the group in each
// hierarchy), what it starts after is too, and Remove kills it.
func TestPlaceMovesAProcess(t *testing.T) {
	eachVersion(t, func(t *testing.T, m *cgroup.Manager) {
		g, err := m.New(cgroup.Limits{MemoryBytes: 64 << 20, Tasks: 8})
		require.NoError(t, err)
		cmd := exec.Command("/bin/sleep", "600")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() }) // when the test fails first
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		require.NoError(t, g.Place(cmd.Process.Pid))
		own, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cgroup"))
		require.NoError(t, err)
		for _, d := range g.Dirs() {
			assert.Contains(t, string(own), filepath.Base(d))
		}
		require.NoError(t, g.Remove())
		watchdog := time.NewTimer(time.Minute)
		defer watchdog.Stop()
		select {
		case err := <-waited:
			require.Error(t, err, "Remove killed the placed process")
		case <-watchdog.C:
			t.Fatal("the placed process outlived its group's Remove")
		}
	})
}

// TestJoinFilesMoveTheWriter: a process given the group's join files
// (here a child that is not in the group, started outside it) moves
// itself by writing "0" to each, and Holds sees it; before, Holds does
// not. On v2 there are none, and Place does the move.
func TestJoinFilesMoveTheWriter(t *testing.T) {
	py := python(t)
	eachVersion(t, func(t *testing.T, m *cgroup.Manager) {
		g, err := m.New(cgroup.Limits{MemoryBytes: 64 << 20, Tasks: 8})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, g.Remove()) })
		files, err := g.JoinFiles()
		require.NoError(t, err)
		if m.Version() == cgroup.V2 {
			require.Empty(t, files)
			return
		}
		require.Len(t, files, len(g.Dirs()))
		// The child waits for a line on stdin, then writes "0" to fds 3... and waits again.
		cmd := exec.Command(py, "-c", "import os,sys\nsys.stdin.readline()\nfor fd in range(3, 3 + int(sys.argv[1])):\n    os.write(fd, b'0')\nprint('moved', flush=True)\nsys.stdin.readline()", strconv.Itoa(len(files)))
		cmd.ExtraFiles = files
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		for _, f := range files {
			require.NoError(t, f.Close())
		}
		assert.False(t, g.Holds(cmd.Process.Pid), "in the group before it moved itself")
		_, err = in.Write([]byte("\n"))
		require.NoError(t, err)
		line := make([]byte, 6)
		_, err = io.ReadFull(out, line)
		require.NoError(t, err)
		assert.True(t, g.Holds(cmd.Process.Pid), "not in the group after it moved itself")
		_, err = in.Write([]byte("\n"))
		require.NoError(t, err)
		require.NoError(t, cmd.Wait())
	})
}
