//go:build linux

package python

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/cgroup"
	"github.com/sandbank/sandbank/spi"
)

// groupsOrSkip returns a backend whose runs get a cgroup, or skips where
// the host may create none (unprivileged, no delegated subtree).
func groupsOrSkip(t *testing.T) *Backend {
	t.Helper()
	b := backendOrSkip(t)
	if err := KernelBounds(); err != nil {
		t.Skipf("runs get no cgroup here: %v", err)
	}
	return b
}

// withoutGroups is b with its runs outside any cgroup: what a run holds
// with the rlimits alone.
func withoutGroups(t *testing.T, b *Backend) *Backend {
	c := clone(t, b)
	c.noGroups = true
	return c
}

// kernelLimit is the memory limit of the kernel-held memory tests.
const kernelLimit = 64 << 20

// kernelHeld are scripts that make the kernel hold memory by a path an
// address-space rlimit does not count: each holds input MiB and returns
// how many it holds. System V shared memory and message queues, another
// such path, are refused by the seccomp filter
// (TestFilterRefusesWhatIsNotListed).
var kernelHeld = map[string]string{
	// memfd files: 16 of 16 MiB (RLIMIT_FSIZE bounds each file, not
	// their number).
	"memfd": `
import os
held, fds = 0, []
while held < input:
    fd = os.memfd_create("x")
    fds.append(fd)
    for _ in range(16):
        os.write(fd, b"x" * (1 << 20))
    held += 16
held`,
	// Empty files in /tmp: inodes and directory entries, not pages.
	"tmp_inodes": `
import os
os.mkdir("d")
n = 0
for i in range(100000):
    open("d/%d" % i, "w").close()
    n += 1
n // 1000`,
}

// TestKernelHeldMemoryIsTheMemoryLimit: with the rlimits alone, a run
// under a 64 MiB limit holds 256 MiB by each path (and 100,000 empty
// files in /tmp); in its own cgroup, each ends as the memory limit.
func TestKernelHeldMemoryIsTheMemoryLimit(t *testing.T) {
	b := groupsOrSkip(t)
	for name, script := range kernelHeld {
		t.Run(name, func(t *testing.T) {
			input := json.RawMessage("256")
			limits := spi.Limits{WallClock: 5 * time.Minute, MemoryBytes: kernelLimit}
			out, err := withoutGroups(t, b).Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: input, Limits: limits})
			require.NoError(t, err)
			require.Equal(t, spi.KindOK, out.Kind, "without a group the path is not bounded: %+v", out)
			held, _ := strconv.Atoi(string(out.Value))
			t.Logf("without a cgroup, a run under a %d MiB limit held %s (MiB, or thousands of files)", kernelLimit>>20, out.Value)
			if name != "tmp_inodes" {
				assert.Greater(t, held, 2*kernelLimit>>20)
			}

			out, err = b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: input, Limits: limits})
			require.NoError(t, err)
			assert.Equal(t, spi.Limited(spi.LimitMemory), out, "in a cgroup")
		})
	}
}

// TestMmapPastTheLimitIsTheMemoryLimit: a mapping larger than the limit,
// touched, is the memory limit, not an OSError the script sees (which is
// what the address-space rlimit alone gives).
func TestMmapPastTheLimitIsTheMemoryLimit(t *testing.T) {
	b := groupsOrSkip(t)
	script := []byte("import mmap\nm = mmap.mmap(-1, 1 << 30)\nfor i in range(0, 1 << 30, 4096):\n    m[i] = 1\n")
	limits := spi.Limits{WallClock: 5 * time.Minute, MemoryBytes: kernelLimit}
	out, err := withoutGroups(t, b).Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage("null"), Limits: limits})
	require.NoError(t, err)
	assert.Equal(t, spi.KindThrew, out.Kind, "without a group: %+v", out)
	out, err = b.Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage("null"), Limits: limits})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitMemory), out)
}

// TestThreadsAreBoundedForRoot: pids.max bounds a run's threads whoever
// starts the sandbox; RLIMIT_NPROC does not bind root.
func TestThreadsAreBoundedForRoot(t *testing.T) {
	b := groupsOrSkip(t)
	script := []byte(`
import threading
threading.stack_size(1 << 16)
ev = threading.Event()
n = 0
try:
    for _ in range(200):
        threading.Thread(target=ev.wait).start()
        n += 1
except RuntimeError:
    pass
ev.set()
n`)
	limits := spi.Limits{WallClock: 5 * time.Minute, MemoryBytes: kernelLimit}
	if os.Geteuid() == 0 {
		out, err := withoutGroups(t, b).Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage("null"), Limits: limits})
		require.NoError(t, err)
		n, _ := strconv.Atoi(string(out.Value))
		t.Logf("without a group, root's run started %d threads (RLIMIT_NPROC does not bind root)", n)
		assert.Greater(t, n, runTasks, "%+v", out)
	}
	out, err := b.Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage("null"), Limits: limits})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	n, err := strconv.Atoi(string(out.Value))
	require.NoError(t, err)
	t.Logf("in a group, the run started %d threads", n)
	assert.LessOrEqual(t, n, maxThreads, "pids.max: bubblewrap, the interpreter, %d threads", maxThreads)
}

// TestValueThatFitsIsReturned: a 16 MiB value under a 64 MiB limit is
// returned.
func TestValueThatFitsIsReturned(t *testing.T) {
	b := groupsOrSkip(t)
	script := []byte(`"x" * (16 << 20)`)
	out, err := withoutGroups(t, b).Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage("null"),
		Limits: spi.Limits{WallClock: 5 * time.Minute, MemoryBytes: kernelLimit}})
	require.NoError(t, err)
	t.Logf("without a group: %v", out.Kind)
	out, err = b.Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage("null"),
		Limits: spi.Limits{WallClock: 5 * time.Minute, MemoryBytes: kernelLimit}})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	assert.Len(t, out.Value, 16<<20+2)
}

// TestGroupIsRemoved: no run's group outlives it.
func TestGroupIsRemoved(t *testing.T) {
	b := groupsOrSkip(t)
	m, err := cgroup.Default()
	require.NoError(t, err)
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("6*7"), Input: json.RawMessage("null"),
		Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: kernelLimit}, Logs: discard{}})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	t.Logf("an echo's group peaked at %.1f MiB", float64(out.Stats.MemoryPeakBytes)/(1<<20))
	assert.True(t, waitFor(func() bool { return leftGroups(m) == 0 }), "groups left: %d", leftGroups(m))
}

type discard struct{}

func (discard) Log(spi.LogLevel, spi.LogStream, string) bool { return true }

// leftGroups counts the groups m created that exist.
func leftGroups(m *cgroup.Manager) int { return len(m.Groups()) }

// TestGroupsUnderConcurrency: 32 runs, 16 at a time, good and hostile
// (an allocation bomb, a thread bomb, memfd files): each answer is the
// right one, and no run's group is left.
func TestGroupsUnderConcurrency(t *testing.T) {
	b := groupsOrSkip(t)
	m, err := cgroup.Default()
	require.NoError(t, err)
	cases := []struct {
		script string
		want   func(spi.Outcome) bool
	}{
		{"6 * 7", func(o spi.Outcome) bool { return o.Kind == spi.KindOK && string(o.Value) == "42" }},
		{"held = []\nwhile True:\n    held.append(b'x' * (1 << 20))", func(o spi.Outcome) bool { return o.Kind == spi.KindLimit && o.Limit == spi.LimitMemory }},
		{kernelHeld["memfd"], func(o spi.Outcome) bool { return o.Kind == spi.KindLimit && o.Limit == spi.LimitMemory }},
		{"import threading\nthreading.stack_size(1 << 16)\nev = threading.Event()\nn = 0\ntry:\n    for _ in range(500):\n        threading.Thread(target=ev.wait).start()\n        n += 1\nexcept RuntimeError:\n    pass\nev.set()\nn < 19",
			func(o spi.Outcome) bool { return o.Kind == spi.KindOK && string(o.Value) == "true" }},
	}
	sem := make(chan struct{}, 16)
	errs := make(chan string, 32)
	for i := range 32 {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			c := cases[i%len(cases)]
			out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(c.script), Input: json.RawMessage("256"),
				Limits: spi.Limits{WallClock: 5 * time.Minute, MemoryBytes: kernelLimit}})
			if err != nil || !c.want(out) {
				errs <- fmt.Sprintf("case %d: %+v %v", i%len(cases), out, err)
				return
			}
			errs <- ""
		}()
	}
	for range 32 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	assert.True(t, waitFor(func() bool { return leftGroups(m) == 0 }), "groups left: %v", m.Groups())
}

// TestRunsJoinTheirGroupThemselves: on v1, a zygote's run moves itself
// into its group as it takes its request (the host only checks), so no
// run waits for the kernel's global lock a move by pid takes; each run
// is still in its group (its memory limit holds).
func TestRunsJoinTheirGroupThemselves(t *testing.T) {
	b := zygoteOrSkip(t)
	if err := KernelBounds(); err != nil {
		t.Skipf("runs get no cgroup here: %v", err)
	}
	m, err := cgroup.Default()
	require.NoError(t, err)
	if m.Version() != cgroup.V1 {
		t.Skip("on v2 the host moves each run")
	}
	for range 3 {
		evalOK(t, b, "6 * 7", "42")
	}
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("held = []\nwhile True:\n    held.append(b'x' * (1 << 20))"),
		Limits: spi.Limits{WallClock: 5 * time.Minute, MemoryBytes: kernelLimit}})
	require.NoError(t, err)
	assert.Equal(t, spi.LimitMemory, out.Limit, "%+v", out)
	assert.Zero(t, b.zygotes.movedByHost.Load(), "runs the host moved")
}
