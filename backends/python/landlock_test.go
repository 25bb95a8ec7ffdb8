//go:build linux

package python

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/spi"
)

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// landlockProbe tries, from inside a run, what Landlock refuses: running
// a program (the interpreter itself, which the sandbox holds), signalling
// bubblewrap's init (pid 1, outside the run's domain), and writing in
// /tmp, which it allows.
const landlockProbe = `
import os, sys
def attempt(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return type(e).__name__
def execute():
    r, w = os.pipe()
    # A descriptor the exec'd interpreter inherits, so that a successful
    # exec is seen: it writes one byte.
    os.set_inheritable(w, True)
    os.execv(sys.executable, [sys.executable, "-S", "-c", "import os; os.write(%d, b'x')" % w])
def tmp():
    with open("/tmp/f", "w") as f:
        f.write("x")
{"exec": attempt(execute), "signal": attempt(lambda: os.kill(1, 0)), "tmp": attempt(tmp)}`

// TestLandlockConfinesTheRun: with Landlock, a run can neither exec a
// program nor signal a process outside its domain, and still writes in
// /tmp; without it, the exec replaces the runner (the run ends without a
// result) and the signal reaches bubblewrap's init.
func TestLandlockConfinesTheRun(t *testing.T) {
	b := backendOrSkip(t)
	abi := landlockABI()
	if abi < 1 {
		t.Skip("this kernel has no Landlock (or it is disabled): runs are not confined by it")
	}
	run := func(b *Backend) spi.Outcome {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(landlockProbe), Input: json.RawMessage("null"),
			Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20}})
		require.NoError(t, err)
		return out
	}
	out := run(b)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	var got map[string]string
	require.NoError(t, json.Unmarshal(out.Value, &got))
	assert.Equal(t, "PermissionError", got["exec"], "exec")
	assert.Equal(t, "ok", got["tmp"], "/tmp is writable")
	if abi >= 6 {
		assert.Equal(t, "PermissionError", got["signal"], "signal scoped (ABI %d)", abi)
	}

	unconfined := *b
	unconfined.noLandlock = true
	out = run(&unconfined)
	assert.NotEqual(t, spi.KindOK, out.Kind, "without Landlock the exec replaces the runner: %+v", out)
	unconfinedSignal := `
import os
try:
    os.kill(1, 0)
    r = "ok"
except OSError as e:
    r = type(e).__name__
r`
	o, err := unconfined.Evaluate(context.Background(), spi.Request{Script: []byte(unconfinedSignal), Input: json.RawMessage("null"),
		Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20}})
	require.NoError(t, err)
	assert.Equal(t, `"ok"`, string(o.Value), "without Landlock the signal reaches bubblewrap's init: %+v", o)
}
