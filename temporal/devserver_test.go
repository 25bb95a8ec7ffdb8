package temporal

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// devServerEnv names a dev server binary built beforehand (.ci/run builds
// one; by hand: cd temporal/internal/devserver && go build -o
// /tmp/devserver .). The integration test then runs it, and never builds
// nor skips.
const devServerEnv = "SANDBANK_TEMPORAL_DEVSERVER"

// runReserve is what the integration tests keep, of the time go test's
// -timeout gives the test binary, for their runs once the dev server is
// built (they share it, and take under a minute each; their own waits are
// bounded by the same deadline).
const runReserve = 4 * time.Minute

// devServer returns the dev server binary the integration test runs: the
// one devServerEnv names, or one it builds into a temporary directory. The
// build must end runReserve before the test binary's deadline (go test
// -timeout, 10 minutes by default); a build that cannot is stopped, with
// every process it started, and the test is skipped, not failed: a cold
// build cache makes the build longer than the default timeout on a small
// machine, and the README's test command must pass there. What the stopped
// build compiled stays in the build cache, so the next run gets further.
func devServer(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(devServerEnv); bin != "" {
		info, err := os.Stat(bin)
		require.NoError(t, err, "%s names no dev server binary", devServerEnv)
		require.True(t, info.Mode().IsRegular(), "%s names no dev server binary", devServerEnv)
		return bin
	}
	built.Lock()
	defer built.Unlock()
	if built.bin == "" {
		deadline, ok := t.Deadline()
		built.bin = buildWithin(t, builtDir(t), deadline, ok)
	}
	return built.bin
}

// built is the dev server this test binary built, which its integration
// tests share; TestMain removes its directory.
var built struct {
	sync.Mutex
	dir, bin string
}

// builtDir returns the directory the dev server is built into, made on
// first use. Called with built held.
func builtDir(t *testing.T) string {
	t.Helper()
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "sandbank-devserver-")
		require.NoError(t, err)
		built.dir = dir
	}
	return built.dir
}

// removeBuilt removes the directory of the dev server built, if any.
func removeBuilt() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// buildWithin builds the dev server into dir so that the build ends
// runReserve before deadline (when hasDeadline), or skips the test.
func buildWithin(t *testing.T, dir string, deadline time.Time, hasDeadline bool) string {
	t.Helper()
	ctx := context.Background()
	budget := time.Duration(-1)
	if hasDeadline {
		stop := deadline.Add(-runReserve)
		budget = time.Until(stop)
		if budget <= 0 {
			skipBuild(t, 0)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, stop)
		defer cancel()
	}
	bin := filepath.Join(dir, "devserver")
	out, err := buildDevServer(ctx, bin)
	if err != nil && ctx.Err() != nil {
		skipBuild(t, budget)
	}
	require.NoError(t, err, "building the dev server: %s", out)
	return bin
}

// skipBuild skips the test whose dev server could not be built within
// budget.
func skipBuild(t *testing.T, budget time.Duration) {
	t.Helper()
	t.Skipf("temporal: building the dev server (temporal/internal/devserver, about 390 modules) could not end "+
		"in the %v that go test's -timeout left for it (a cold build cache needs longer on a small machine); "+
		"a build that started was stopped, and what it compiled stays in the build cache, so a later run gets further. "+
		"To run this test now: give go test a longer -timeout (e.g. -timeout 60m), or build the dev server once "+
		"(cd temporal/internal/devserver && go build -o /tmp/devserver .) and set %s=/tmp/devserver",
		budget.Round(time.Second), devServerEnv)
}

// buildDevServer builds internal/devserver (its own module) into bin. The
// build and every process it starts (the compiler and linker runs) are
// one process group, killed when ctx is done: no build outlives the test
// that started it.
func buildDevServer(ctx context.Context, bin string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", bin, ".") // no symbols: a faster link
	cmd.Dir = filepath.Join("internal", "devserver")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := startGroup(cmd); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	return out.Bytes(), err
}

// startGroup starts cmd, made with exec.CommandContext, as the leader of a
// process group of its own; when cmd's context is done, the whole group
// is killed, not only cmd.
func startGroup(cmd *exec.Cmd) error {
	ownGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = 30 * time.Second // for output pipes a killed process's stray child might hold
	return cmd.Start()
}

// TestStoppedBuildLeavesNoProcess stops a startGroup command whose child
// started a grandchild, as a go build starts the compiler, and requires
// both to be gone: the pipe they hold as standard output reaches its end
// only once every process holding it has exited.
func TestStoppedBuildLeavesNoProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no process groups")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 600 & echo $!; wait")
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, startGroup(cmd))
	require.NoError(t, w.Close()) // the shell (and its sleep) hold the only write ends now
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	sleeper, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)

	cancel()
	require.Error(t, <-done, "the stopped command reported success")
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, r); close(eof) }()
	select {
	case <-eof:
	case <-time.After(2 * time.Minute): // a wide margin: the kill is immediate
		if p, err := os.FindProcess(sleeper); err == nil {
			_ = p.Kill() // the grandchild this test started, by its id
		}
		t.Fatal("the grandchild of the stopped command outlived it")
	}
}

// TestBuildWithoutTimeSkips: when go test's deadline leaves no time for
// the build, the integration test is skipped, not failed, and no build
// starts.
func TestBuildWithoutTimeSkips(t *testing.T) {
	var sub *testing.T
	t.Run("build", func(t *testing.T) {
		sub = t
		buildWithin(t, t.TempDir(), time.Now().Add(runReserve/2), true)
		t.Error("buildWithin returned")
	})
	require.True(t, sub.Skipped(), "the test was not skipped")
	require.False(t, sub.Failed())
}
