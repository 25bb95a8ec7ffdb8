//go:build linux

package python_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/spi"
)

// newBackend returns a backend with default options, or skips.
func newBackend(t *testing.T) *python.Backend {
	t.Helper()
	needSandbox(t)
	b, err := python.New(nil)
	require.NoError(t, err)
	return b
}

// eval runs script with input under generous limits.
func eval(t *testing.T, b *python.Backend, script, input string) spi.Outcome {
	t.Helper()
	out, err := b.Evaluate(context.Background(), spi.Request{
		Script: []byte(script),
		Input:  json.RawMessage(input),
		Limits: spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 64 << 20},
	})
	require.NoError(t, err)
	return out
}

// TestValuesCrossAsJSON: the result is the last expression's value, as
// JSON; integers past 2^53 and Unicode come back exactly; what JSON
// cannot carry fails typed, with a fixed message.
func TestValuesCrossAsJSON(t *testing.T) {
	b := newBackend(t)
	for _, tc := range []struct {
		name, script, input string
		kind                spi.OutcomeKind
		value               string // KindOK
		errName, contains   string // KindThrew
	}{
		{name: "last expression", script: "x = 2\nx * 21", input: "null", kind: spi.KindOK, value: "42"},
		{name: "no expression is None", script: "x = 1", input: "null", kind: spi.KindOK, value: "null"},
		{name: "big integers exact", script: "[input, input * 2 ** 64]", input: "9007199254740993", kind: spi.KindOK,
			value: "[9007199254740993,166153499473114502559719956244594688]"},
		{name: "unicode", script: "input + '✓😀'", input: `"é"`, kind: spi.KindOK, value: `"é✓😀"`},
		{name: "tuple is a list", script: "(1, 'two', None)", input: "null", kind: spi.KindOK, value: `[1,"two",null]`},
		{name: "a coroutine is awaited", script: "async def f():\n    return 7\nf()", input: "null", kind: spi.KindOK, value: "7"},
		{name: "NaN", script: "float('nan')", input: "null", kind: spi.KindThrew, errName: "ValueError", contains: "NaN or an infinity"},
		{name: "infinity", script: "[float('inf')]", input: "null", kind: spi.KindThrew, errName: "ValueError", contains: "NaN or an infinity"},
		{name: "set", script: "{1, 2}", input: "null", kind: spi.KindThrew, errName: "TypeError", contains: "type set"},
		{name: "bytes", script: "b'x'", input: "null", kind: spi.KindThrew, errName: "TypeError", contains: "type bytes"},
		{name: "raise", script: "\nraise KeyError('k')", input: "null", kind: spi.KindThrew, errName: "KeyError", contains: "line 2: 'k'"},
		{name: "syntax", script: "def f(:\n", input: "null", kind: spi.KindThrew, errName: "SyntaxError", contains: "line 1"},
		{name: "exit", script: "import sys\nsys.exit(3)", input: "null", kind: spi.KindThrew, errName: "SystemExit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := eval(t, b, tc.script, tc.input)
			require.Equal(t, tc.kind, out.Kind, "%+v", out)
			if tc.kind == spi.KindOK {
				assert.JSONEq(t, tc.value, string(out.Value))
				assert.Equal(t, tc.value, canonical(t, out.Value), "exact, integers included")
				return
			}
			assert.Equal(t, tc.errName, out.Name)
			assert.Contains(t, out.Message, tc.contains)
		})
	}
}

// TestDeterministic: the clock, random, os.urandom, uuid4 and hashing of
// strings answer the same in every run, and the clock is the fake one.
func TestDeterministic(t *testing.T) {
	b := newBackend(t)
	const script = `import time, random, os, uuid, datetime
[time.time_ns() // 1000000, random.random(), os.urandom(4).hex(), str(uuid.uuid4()), hash("sandbank") % 1000, datetime.datetime.now().year]`
	first := eval(t, b, script, "null")
	require.Equal(t, spi.KindOK, first.Kind, "%+v", first)
	second := eval(t, b, script, "null")
	assert.JSONEq(t, string(first.Value), string(second.Value))
	var got []any
	require.NoError(t, json.Unmarshal(first.Value, &got))
	assert.InDelta(t, 946684800000, got[0], 1000, "the fake clock")
	assert.EqualValues(t, 2000, got[5])
}

// TestSleepAdvancesTheFakeClock: time.sleep and asyncio.sleep do not
// wait; a run that sleeps an hour ends at once, an hour later by its
// clock.
func TestSleepAdvancesTheFakeClock(t *testing.T) {
	b := newBackend(t)
	out := eval(t, b, "import time, asyncio\nt0 = time.time()\ntime.sleep(3600)\nawait asyncio.sleep(3600)\nround(time.time() - t0)", "null")
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	assert.Equal(t, "7200", string(out.Value))
}

// TestSandboxRefuses: every door the seccomp filter and the namespaces
// close, tried from a script, answers with the error the kernel gives.
func TestSandboxRefuses(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the script calls bpf by its x86_64 number")
	}
	b := newBackend(t)
	const script = `import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def err(rc):
    return "ok" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
def call(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, "?")
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
{
    "fork": call(fork),
    "unshare": err(libc.unshare(0x10000000)),
    "mount": err(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
    "ptrace": err(libc.ptrace(16, 1, None, None)),
    "bpf": err(libc.syscall(321, 0, None, 0)),
    "inet": call(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
    "netlink": call(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)),
    "unix": call(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
    "passwd": call(lambda: open("/etc/passwd")),
    "proc": call(lambda: os.listdir("/proc")),
    "write_usr": call(lambda: open("/usr/x", "w")),
    "uid": os.getuid(),
    "env": dict(os.environ),
}`
	out := eval(t, b, script, "null")
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Value, &got))
	for _, k := range []string{"fork", "unshare", "mount", "ptrace", "bpf", "inet", "netlink"} {
		assert.Equal(t, "EPERM", got[k], "%s: refused by the seccomp filter", k)
	}
	assert.Equal(t, "ok", got["unix"], "AF_UNIX stays, for asyncio")
	assert.Equal(t, "ENOENT", got["passwd"], "no /etc in the root")
	assert.Equal(t, "ENOENT", got["proc"], "no /proc in the root")
	assert.Equal(t, "EROFS", got["write_usr"], "the root is read-only")
	assert.EqualValues(t, 65534, got["uid"])
	assert.Empty(t, got["env"])
}

// TestLimits: memory, CPU and the wall clock end a run with their typed
// limit, even inside one long native operation.
func TestLimits(t *testing.T) {
	needSandbox(t)
	small, err := python.New(&python.Options{CPUTime: 300 * time.Millisecond})
	require.NoError(t, err)
	run := func(b *python.Backend, script string, limits spi.Limits) spi.Outcome {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: json.RawMessage("null"), Limits: limits})
		require.NoError(t, err)
		return out
	}
	long := spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20}
	assert.Equal(t, spi.Limited(spi.LimitMemory), run(small, `"x" * 10**10`, long))
	assert.Equal(t, spi.Limited(spi.LimitMemory), run(small, "held = []\nwhile True:\n    held.append(bytearray(1 << 20))", long))
	assert.Equal(t, spi.Limited(spi.LimitCPU), run(small, "while True:\n    pass", long))
	// The profiling timer holds the budget (RLIMIT_CPU alone would allow
	// a whole second): what is left of it when the script starts is above
	// zero and about the budget (the kernel rounds a timer up to its
	// tick, so it may read a few milliseconds over).
	left := run(small, "import signal\nsignal.getitimer(signal.ITIMER_PROF)[0]", long)
	require.Equal(t, spi.KindOK, left.Kind, "%+v", left)
	var secs float64
	require.NoError(t, json.Unmarshal(left.Value, &secs))
	assert.Greater(t, secs, 0.0)
	assert.Less(t, secs, 0.5)
	short := spi.Limits{WallClock: 200 * time.Millisecond, MemoryBytes: 32 << 20}
	assert.Equal(t, spi.Limited(spi.LimitWallClock), run(small, `import re; re.match(r"(a*)*b", "a" * 64)`, short))
}

// TestNewRefusesWhatIsMissing: New names the missing tool.
func TestNewRefusesWhatIsMissing(t *testing.T) {
	_, err := python.New(&python.Options{Bubblewrap: "/nonexistent/bwrap"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bubblewrap")
	needSandbox(t)
	_, err = python.New(&python.Options{Python: "/nonexistent/python3"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/nonexistent/python3")
	_, err = python.New(&python.Options{CPUTime: -time.Second})
	require.Error(t, err)
}

// canonical re-encodes JSON text with Unicode unescaped and integers kept
// as written.
func canonical(t *testing.T, text json.RawMessage) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	require.NoError(t, e.Encode(v))
	return strings.TrimSuffix(b.String(), "\n")
}

// TestNewSaysWhatTheKernelRefuses: where bubblewrap cannot build the
// sandbox (here a stand-in that fails as bwrap does when the kernel
// refuses user namespaces), the check of the machine fails with
// bubblewrap's reason, in Warm and in Evaluate alike.
func TestNewSaysWhatTheKernelRefuses(t *testing.T) {
	needSandbox(t)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh for the stand-in")
	}
	fake := filepath.Join(t.TempDir(), "bwrap")
	require.NoError(t, os.WriteFile(fake, []byte("#!"+sh+"\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"), 0o755))
	b, err := python.New(&python.Options{Bubblewrap: fake})
	require.NoError(t, err, "New starts nothing")
	t.Cleanup(func() { _ = b.Close() })
	err = b.Warm(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "python: the sandbox did not start: bwrap: No permissions to create new namespace")
	assert.Contains(t, err.Error(), "namespaces")
	_, err = b.Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: json.RawMessage("null")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bwrap: No permissions to create new namespace")
}
