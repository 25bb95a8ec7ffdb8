package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/internal/fenced"
)

// readmeServePort is the port README's HTTP quick start serves on; the
// test serves on a free one instead, the block's only change.
const readmeServePort = ":8080"

// TestReadmeCommands runs every ```sh block of README.md that calls
// sandbank, as pasted, with sh -e in an empty directory and this test
// binary as sandbank on PATH (the real command line, every built-in
// engine): each must exit 0, and each "#=> TEXT" comment's TEXT must be
// in what the block printed. A command ending in "&" (sandbank serve) is
// started first, and the rest runs once it says it is serving; it is
// stopped with SIGTERM after. A block that needs an engine this machine
// lacks is skipped, saying why. -short skips the test (it starts a
// process per command), and so does -race, under which compiling
// starlark-wasm's guest, which README's Starlark and its servers use,
// takes minutes. The compiled modules are cached where the command keeps
// them by default, as for a person running it.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs README's commands, a process each")
	}
	if raceEnabled {
		t.Skip("under -race starlark-wasm's guest takes minutes to compile; the test runs without -race")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(self, filepath.Join(bin, "sandbank")))
	state := t.TempDir()
	env := append(os.Environ(), realChildEnv+"=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_STATE_HOME="+state) // sandbank serve's data directory

	ran := 0
	for i, block := range fenced.Blocks(string(readme), "sh") {
		if !callsSandbank(block) {
			continue
		}
		ran++
		t.Run("block"+strconv.Itoa(i+1), func(t *testing.T) {
			if strings.Contains(block, ".py") {
				for _, u := range builtin.Missing() {
					if u.Engine == "python" {
						t.Skipf("the block runs Python, which this machine lacks: %s", u.Reason)
					}
				}
			}
			if strings.Contains(block, "--package") {
				needDataPackages(t)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			dir := t.TempDir()
			if strings.Contains(block, readmeServePort) {
				block = strings.ReplaceAll(block, readmeServePort, ":"+freePort(t))
			}
			script, background := splitBackground(block)
			for _, command := range background {
				startServer(ctx, t, sh, command, dir, env)
			}
			cmd := exec.CommandContext(ctx, sh, "-e", "-c", script)
			cmd.Dir, cmd.Env = dir, env
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			require.NoError(t, err, "README's block exits 0:\n%s\nstdout:\n%s\nstderr:\n%s", block, out.String(), errb.String())
			for _, want := range expectations(block) {
				assert.Contains(t, out.String(), want, "README's block prints what its #=> comment says:\n%s", block)
			}
		})
	}
	assert.Positive(t, ran, "README has no block that calls sandbank")
}

// command is a line's command, without its comment.
func command(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// callsSandbank reports whether a line of the block runs sandbank (alone
// or at the end of a pipe).
func callsSandbank(block string) bool {
	for _, l := range strings.Split(block, "\n") {
		c := command(l)
		if i := strings.LastIndex(c, "|"); i >= 0 {
			c = strings.TrimSpace(c[i+1:])
		}
		if strings.HasPrefix(c, "sandbank ") {
			return true
		}
	}
	return false
}

// splitBackground takes the commands that end in "&" out of the block.
func splitBackground(block string) (script string, background []string) {
	var rest []string
	for _, l := range strings.Split(block, "\n") {
		if c := command(l); strings.HasSuffix(c, "&") && !strings.HasSuffix(c, "&&") {
			background = append(background, strings.TrimSpace(strings.TrimSuffix(c, "&")))
			continue
		}
		rest = append(rest, l)
	}
	return strings.Join(rest, "\n"), background
}

// expectations are the texts of the block's "#=> TEXT" comments.
func expectations(block string) []string {
	var out []string
	for _, l := range strings.Split(block, "\n") {
		if _, want, ok := strings.Cut(l, "#=> "); ok {
			out = append(out, strings.TrimSpace(want))
		}
	}
	return out
}

// startServer starts a background command of the block and returns once
// it writes that it is serving (sandbank serve's "serving on" line); the
// test's cleanup stops it with SIGTERM and waits for it.
func startServer(ctx context.Context, t *testing.T, sh, command, dir string, env []string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, sh, "-c", "exec "+command)
	cmd.Dir, cmd.Env = dir, env
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	serving := make(chan struct{})
	var log bytes.Buffer
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		s := bufio.NewScanner(stderr)
		said := false
		for s.Scan() {
			fmt.Fprintln(&log, s.Text())
			if !said && strings.Contains(s.Text(), "serving on ") {
				said = true
				close(serving)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-drained
		_ = cmd.Wait()
	})
	select {
	case <-serving:
	case <-drained:
		<-drained
		t.Fatalf("%s ended before it was serving:\n%s", command, log.String())
	case <-ctx.Done():
		t.Fatalf("%s was not serving before the test's bound: %v", command, ctx.Err())
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// needDataPackages skips a README block that allows Python's data
// packages where the system's interpreter lacks them (Debian:
// python3-numpy, python3-pandas, python3-matplotlib), except in CI
// (CI=true), which installs them: a block that skips there is a failure.
func needDataPackages(t *testing.T) {
	t.Helper()
	err := exec.Command("/usr/bin/python3", "-c", "import numpy, pandas, matplotlib").Run()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI must install python3-numpy, python3-pandas and python3-matplotlib for /usr/bin/python3: %v", err)
	}
	t.Skipf("the block imports pandas and matplotlib, which /usr/bin/python3 lacks (Debian: apt-get install python3-pandas python3-matplotlib): %v", err)
}
