package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// fakeChildEnv makes the test binary act as a sandbank binary whose
// registry holds the fake engines of fakeApp, running childDirective
// (see TestMain).
const fakeChildEnv = "SANDBANK_TEST_FAKE_CHILD"

// childDirective is directive plus two verbs only a child process runs:
//
//	crash    a real Go fatal error (stack overflow), which no recover stops
//	hang     prints "fake: running" on stderr, then waits for the context
func childDirective(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	switch strings.TrimSpace(string(req.Script)) {
	case "crash":
		debug.SetMaxStack(1 << 20) // a fatal error in milliseconds, not after 1 GB
		return spi.OK(json.RawMessage(recurse(0))), nil
	case "hang":
		os.Stderr.WriteString("fake: running\n")
		<-ctx.Done()
		return spi.Outcome{}, ctx.Err()
	}
	return directive(ctx, req)
}

// recurse never returns: it overflows the goroutine stack.
func recurse(n int) string {
	var pad [64]byte
	pad[n%64] = byte(n)
	return recurse(n+1) + string(pad[:1])
}

// child returns the command of the test binary acting as sandbank.
func child(ctx context.Context, stdin string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), fakeChildEnv+"=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the child ran: %v", err)
	return ee.ExitCode()
}

// isTypedFailure is the rule doc.go gives a caller of "run --json": exit
// code 2 AND one {"ok":false,"code":…} object on stdout. A Go runtime
// crash also exits 2, but writes nothing on stdout.
func isTypedFailure(code int, stdout string) bool {
	var v struct {
		OK   *bool  `json:"ok"`
		Code string `json:"code"`
	}
	return code == exitFailure && json.Unmarshal([]byte(stdout), &v) == nil && v.OK != nil && !*v.OK && v.Code != ""
}

// TestTypedFailureIsToldFromACrash runs a real process: a typed failure
// and a real fatal error both exit 2, and only the typed failure writes
// its object on stdout.
func TestTypedFailureIsToldFromACrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cmd, out, errb := child(ctx, "throw TypeError boom", "run", "--json", "--lang", "javascript", "-")
	code := exitCode(t, cmd.Run())
	assert.Equal(t, exitFailure, code, errb.String())
	assert.True(t, isTypedFailure(code, out.String()), "stdout: %q", out.String())

	cmd, out, errb = child(ctx, "crash", "run", "--json", "--lang", "javascript", "-")
	code = exitCode(t, cmd.Run())
	assert.Equal(t, 2, code, "Go exits 2 on a fatal error: %s", firstLines(errb.String()))
	assert.Contains(t, errb.String(), "fatal error: stack overflow")
	assert.Empty(t, out.String(), "a crash writes nothing on stdout")
	assert.False(t, isTypedFailure(code, out.String()))
}

// TestTypedFailureWithoutItsObjectIsNotExit2: when stdout cannot take the
// object, the run does not exit 2, since the object is the proof.
func TestTypedFailureWithoutItsObjectIsNotExit2(t *testing.T) {
	a, _ := fakeApp(t)
	a.stdin, a.stdout, a.stderr = strings.NewReader("throw TypeError boom"), failingWriter{}, &bytes.Buffer{}
	code := a.execute([]string{"run", "--json", "--lang", "javascript", "-"})
	assert.Equal(t, exitUntyped, code)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stdout closed") }

// TestSignalCancelsTheRun sends SIGINT and SIGTERM to a process running a
// script that never ends: the run is cancelled, the exit code is 128 +
// the signal, and --json says it is not retryable.
func TestSignalCancelsTheRun(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, exitSIGINT, "SIGINT"}, {syscall.SIGTERM, exitSIGTERM, "SIGTERM"}} {
		t.Run(tt.name, func(t *testing.T) {
			// Bound: the child must stop within 2 minutes of the signal
			// (it stops at once; the margin is for a loaded machine).
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "run", "--json", "--timeout", "1h", "--lang", "javascript", "-")
			cmd.Env = append(os.Environ(), fakeChildEnv+"=1")
			cmd.Stdin = strings.NewReader("hang")
			var out bytes.Buffer
			cmd.Stdout = &out
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			sc := bufio.NewScanner(stderr)
			require.True(t, sc.Scan(), "the child started the script")
			require.Equal(t, "fake: running", sc.Text())
			require.NoError(t, cmd.Process.Signal(tt.sig))
			var rest strings.Builder
			for sc.Scan() {
				rest.WriteString(sc.Text() + "\n")
			}
			code := exitCode(t, cmd.Wait())
			assert.Equal(t, tt.code, code, rest.String())
			var got struct {
				OK        bool   `json:"ok"`
				Error     string `json:"error"`
				Retryable *bool  `json:"retryable"`
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
			assert.Contains(t, got.Error, "cancelled by "+tt.name)
			require.NotNil(t, got.Retryable)
			assert.False(t, *got.Retryable)
		})
	}
}

func firstLines(s string) string {
	lines := strings.SplitN(s, "\n", 4)
	if len(lines) > 3 {
		lines = lines[:3]
	}
	return strings.Join(lines, "\n")
}
