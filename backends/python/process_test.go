//go:build linux

package python

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	if err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
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

// TestNoProcessLeftBehind: concurrent good and hostile runs (values,
// errors, memory and CPU bombs, loops stopped by the wall clock or by a
// cancellation) each get their typed answer, and once they have, no
// process of theirs is left.
func TestNoProcessLeftBehind(t *testing.T) {
	b := backendOrSkip(t)
	cases := []struct {
		script string
		want   spi.OutcomeKind
		limit  spi.LimitKind
		cancel bool
	}{
		{script: "input * 2", want: spi.KindOK},
		{script: "raise ValueError('x')", want: spi.KindThrew},
		{script: `"x" * 10**10`, want: spi.KindLimit, limit: spi.LimitMemory},
		{script: "while True:\n    pass", want: spi.KindLimit, limit: spi.LimitWallClock},
		{script: "import re\nre.match(r'(a*)*b', 'a' * 64)", want: spi.KindLimit, limit: spi.LimitWallClock},
		{script: "while True:\n    pass", cancel: true},
	}
	const rounds = 4
	var wg sync.WaitGroup
	errs := make(chan string, rounds*len(cases))
	for i := range rounds * len(cases) {
		c := cases[i%len(cases)]
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			limits := spi.Limits{WallClock: 500 * time.Millisecond, MemoryBytes: 32 << 20}
			if c.cancel {
				// Only the cancellation ends this run, however late its
				// timer fires on a loaded machine.
				limits.WallClock = time.Hour
			}
			out, err := b.Evaluate(ctx, spi.Request{Script: []byte(c.script), Input: json.RawMessage("21"), Limits: limits})
			switch {
			case c.cancel:
				if err == nil {
					errs <- fmt.Sprintf("%q: a cancelled run must return the context's error, got %+v", c.script, out)
				}
			case err != nil:
				errs <- fmt.Sprintf("%q: %v", c.script, err)
			case out.Kind != c.want || out.Limit != c.limit:
				errs <- fmt.Sprintf("%q: got %+v", c.script, out)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	assert.True(t, waitFor(func() bool { return processesTagged(b.tag) == 0 }),
		"%d process(es) of the runs are still there", processesTagged(b.tag))
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
	if err != nil {
		os.Exit(2)
	}
	b.tag = os.Getenv(helperEnv)
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
