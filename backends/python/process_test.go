//go:build linux

package python

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/spi"
)

// processWait bounds how long a test waits for processes to appear or to
// be gone: generous, so that a loaded machine never fails it.
const processWait = 60 * time.Second

// backendOrSkip returns a backend, or skips where the sandbox cannot run.
func backendOrSkip(t *testing.T) *Backend {
	t.Helper()
	if err := Available(nil); err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	b, err := New(nil)
	if err == nil {
		err = b.Warm(context.Background())
	}
	if err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// processesTagged counts the processes whose command line holds tag (the
// sandbox's bwrap and the interpreter of each run of one backend).
func processesTagged(tag string) int {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	n := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(tag)) {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or processWait passes; it reports
// whether it held. Processes end asynchronously (a SIGKILLed sandbox's
// children are reaped by init), so there is no event to wait on.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(processWait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// descendants lists the processes descended from pid, read from /proc.
func descendants(pid int) []int {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	parent := map[int]int{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		var self, ppid int
		var state string
		if i < 0 || sscan(b[:i], &self) != nil || sscan(b[i+1:], &state, &ppid) != nil {
			continue
		}
		parent[self] = ppid
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func sscan(b []byte, v ...any) error {
	_, err := fmt.Sscan(string(b), v...)
	return err
}

// tagged lists the processes whose command line holds tag.
func tagged(tag string) []int {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, p := range paths {
		b, err := os.ReadFile(p)
		var pid int
		if err == nil && bytes.Contains(b, []byte(tag)) && sscan([]byte(filepath.Base(filepath.Dir(p))), &pid) == nil {
			out = append(out, pid)
		}
	}
	return out
}

// waitExited waits, on each process's pidfd (readable once it has
// exited), until every one of pids has exited or processWait has passed;
// it reports whether they all had.
func waitExited(pids []int) bool {
	deadline := time.Now().Add(processWait)
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		for {
			left := time.Until(deadline)
			if left <= 0 {
				unix.Close(fd)
				return false
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, int(left.Milliseconds())+1)
			if err == unix.EINTR {
				continue
			}
			if n > 0 || err != nil {
				break
			}
		}
		unix.Close(fd)
	}
	return true
}

// TestNoProcessLeftBehind: many concurrent good and hostile runs (values,
// errors, concurrent host calls, memory bombs, a fork, runaway loops and
// a runaway regex stopped by the wall clock, loops stopped by a
// cancellation), 16 at a time, each get their typed answer, and once they
// have, no process of theirs is left: none of this process's descendants
// beyond those before, and none holding the backend's tag (a sandbox's
// inner processes are reparented when bubblewrap dies). 200 runs; 48
// under -short or -race (each run is a process start, slower there).
func TestNoProcessLeftBehind(t *testing.T) {
	b := backendOrSkip(t)
	// What was there before the runs (an earlier test's retired zygote
	// may still be ending) is not the runs': it may stay or go.
	before := without(descendants(os.Getpid()), zygoteProcesses(b))
	cases := []struct {
		script string
		want   spi.OutcomeKind
		value  string // KindOK
		name   string // KindThrew
		limit  spi.LimitKind
		cancel bool
		host   bool
	}{
		{script: "input * 2", want: spi.KindOK, value: "42"},
		{script: "raise ValueError('x')", want: spi.KindThrew, name: "ValueError"},
		{script: "import asyncio\nasync def main():\n    return await asyncio.gather(host.a(input), host.b(input))\nawait main()",
			want: spi.KindOK, value: "[21,21]", host: true},
		{script: `"x" * 10**10`, want: spi.KindLimit, limit: spi.LimitMemory},
		{script: "a = []\nwhile True:\n    a.append(' ' * 10**6)", want: spi.KindLimit, limit: spi.LimitMemory},
		{script: "import os\nos.fork()", want: spi.KindThrew, name: "PermissionError"},
		{script: "while True:\n    pass", want: spi.KindLimit, limit: spi.LimitWallClock},
		{script: "import re\nre.match(r'(a*)*b', 'a' * 64)", want: spi.KindLimit, limit: spi.LimitWallClock},
		{script: "while True:\n    pass", cancel: true},
	}
	runs := 200
	if testing.Short() || raceEnabled {
		runs = 48
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, 16)
	errs := make(chan string, runs)
	for i := range runs {
		c := cases[i%len(cases)]
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			limits := spi.Limits{WallClock: 500 * time.Millisecond, MemoryBytes: 32 << 20}
			if c.cancel || c.host || c.want != spi.KindLimit || c.limit != spi.LimitWallClock {
				// Only the cancellation, the script or a limit other
				// than the wall clock ends these runs, however loaded
				// the machine.
				limits.WallClock = time.Hour
			}
			req := spi.Request{Script: []byte(c.script), Input: json.RawMessage("21"), Limits: limits}
			if c.host {
				req.Host = echoHost{}
			}
			out, err := b.Evaluate(ctx, req)
			switch {
			case c.cancel:
				if !errors.Is(err, context.Canceled) {
					errs <- fmt.Sprintf("%q: a cancelled run must return context.Canceled, got %+v, %v", c.script, out, err)
				}
			case err != nil:
				errs <- fmt.Sprintf("%q: %v", c.script, err)
			case out.Kind != c.want || out.Limit != c.limit || out.Name != c.name || (c.want == spi.KindOK && string(out.Value) != c.value):
				errs <- fmt.Sprintf("%q: got %+v (value %s)", c.script, out, out.Value)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// The zygote in service stays (its bubblewrap, bubblewrap's init and
	// the zygote itself); nothing else does.
	// A zygote retired by a run ends once its runs have, its successor
	// starting meanwhile: the zygote in service is the one then, with
	// its prepared runs (zygoteProcesses), and no other.
	left := func() []int {
		return without(without(append(tagged(b.tag), descendants(os.Getpid())...), zygoteProcesses(b)), before)
	}
	require.True(t, waitFor(func() bool { return len(left()) == 0 }), "process(es) of the runs still there after %v: %v", processWait, left())
	live := zygoteProcesses(b)
	assert.Empty(t, without(tagged(b.tag), live), "process(es) of the runs are still there")
	assert.Empty(t, without(without(descendants(os.Getpid()), live), before), "this process's descendants that were not there before the runs")
	require.NoError(t, b.Close())
	assert.True(t, waitExited(live), "the zygote is still there after Close")
}

// without is pids without those in drop.
func without(pids, drop []int) []int {
	var out []int
	for _, p := range pids {
		if !slices.Contains(drop, p) {
			out = append(out, p)
		}
	}
	return out
}

// echoHost answers every call with its argument.
type echoHost struct{}

func (echoHost) Call(_ context.Context, _ string, args json.RawMessage) (json.RawMessage, error) {
	return args, nil
}

// helperEnv makes the test binary, re-executed, the host of one run that
// never ends (TestHostDeathKillsTheSandbox).
const helperEnv = "SANDBANK_PYTHON_TEST_HOST"

// TestHostDeathKillsTheSandbox: when the host process dies (SIGKILL, no
// cleanup), its runs' sandboxes die with it.
func TestHostDeathKillsTheSandbox(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		hostOneRun()
		return
	}
	b := backendOrSkip(t)
	_ = b
	tag := newTag()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostDeathKillsTheSandbox$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+tag)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // when the test fails before it kills the helper
	// The helper's script calls the host once it runs (the helper then
	// prints a line): from then on it only loops.
	started := make(chan bool, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		started <- err == nil && strings.HasPrefix(line, "started")
	}()
	timer := time.NewTimer(processWait)
	defer timer.Stop()
	select {
	case ok := <-started:
		require.True(t, ok, "the helper ended before its run started")
	case <-timer.C:
		t.Fatalf("the helper's run had not started after %v", processWait)
	}
	require.Positive(t, processesTagged(tag), "the helper's sandbox is running")
	require.NoError(t, syscall.Kill(cmd.Process.Pid, syscall.SIGKILL))
	_ = cmd.Wait()
	assert.True(t, waitFor(func() bool { return processesTagged(tag) == 0 }),
		"%d process(es) of the dead host's run are still there", processesTagged(tag))
}

// hostOneRun runs a loop that never ends, with a wall clock far away,
// until the process is killed.
func hostOneRun() {
	// A CPU budget far past processWait: only the host's death can end
	// this run in time.
	b, err := New(&Options{CPUTime: 10 * time.Minute})
	if err == nil {
		err = b.Warm(context.Background())
	}
	if err != nil {
		os.Exit(2)
	}
	b.tag = os.Getenv(helperEnv)
	b = clone(nil, b) // its zygote holds the tag
	_, _ = b.Evaluate(context.Background(), spi.Request{Script: []byte("host.started()\nwhile True:\n    pass"), Input: json.RawMessage("null"),
		Limits: spi.Limits{WallClock: time.Hour, MemoryBytes: 32 << 20}, Host: startedHost{}})
	os.Exit(3)
}

// startedHost tells the test, on the helper's stdout, that the script runs.
type startedHost struct{}

func (startedHost) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	fmt.Println("started")
	return json.RawMessage("null"), nil
}
