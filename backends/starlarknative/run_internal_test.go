package starlarknative

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/starlarkguest"
	"github.com/sandbank/sandbank/spi"
)

// grow allocates fast past any limit, keeping everything.
const grow = `
def main(input):
    keep = []
    for i in range(1 << 30):
        keep.append("x" * 65536 + str(i))
    return len(keep)
`

// TestMemoryLimitIsTheGroups: a script past its memory limit is
// limitExceeded memory, as the host observes it: the child was killed by
// a signal the host did not send, and its group's events say the kernel
// killed it for the group's memory limit.
func TestMemoryLimitIsTheGroups(t *testing.T) {
	if err := KernelBounds(); err != nil {
		t.Skip(err)
	}
	b, err := New(nil)
	require.NoError(t, err)
	defer b.Close()
	seen := make(chan facts, 1)
	b.observe = func(f facts) { seen <- f }
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(grow), Input: []byte(`{}`), Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20}})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitMemory), out)
	f := <-seen
	assert.Equal(t, starlarkguest.EndTrap, f.Ending, "killed by the kernel")
	assert.Equal(t, "signal: "+syscall.SIGKILL.String(), f.Trap)
	assert.True(t, f.OOM, "the group's events")
}

// children lists the processes this process started as children of
// the engine (their command line is the engine's name), by pid.
func children(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after
		// its closing parenthesis.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if string(cmdline) == Engine+"\x00" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestCloseEndsEveryChild: after Close, no child of the backend is left,
// spares and reaped runs alike, and the backend refuses to run.
func TestCloseEndsEveryChild(t *testing.T) {
	require.Empty(t, children(t), "no child before the test")
	b, err := New(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	for range 3 {
		_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return input\n"), Input: []byte(`1`)})
		require.NoError(t, err)
	}
	require.NoError(t, b.Warm(context.Background()), "a spare is ready")
	require.NotEmpty(t, children(t), "spares wait")
	require.NoError(t, b.Close())
	assert.Empty(t, children(t), "no child after Close")
	_, err = b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return input\n")})
	assert.ErrorIs(t, err, ErrClosed)
}

// countingSink counts the lines delivered to it.
type countingSink struct {
	mu sync.Mutex
	n  int
}

func (s *countingSink) Log(spi.LogLevel, spi.LogStream, string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return true
}

func (s *countingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestNoLogAfterTheRun: a run stopped by its wall clock returns without
// waiting for its child's exit, and no line the child's stream still
// held is delivered after it returned.
func TestNoLogAfterTheRun(t *testing.T) {
	b, err := New(nil)
	require.NoError(t, err)
	defer b.Close()
	sink := &countingSink{}
	const chatty = "def main(input):\n    for i in range(1 << 62):\n        print(\"line\", i)\n"
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(chatty), Input: []byte(`{}`), Logs: sink, Limits: spi.Limits{WallClock: 100 * time.Millisecond}})
	require.NoError(t, err)
	require.Equal(t, spi.Limited(spi.LimitWallClock), out)
	n := sink.count()
	b.reaping.Wait() // the child reaped, its streams read to their end
	assert.Equal(t, n, sink.count(), "no line after the run returned")
}
