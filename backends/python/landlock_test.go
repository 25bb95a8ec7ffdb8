//go:build linux

package python

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// landlockProbe tries, from inside a run, what Landlock refuses: running
// a program (the interpreter itself, which the sandbox holds), and
// writing in /tmp, which it allows. (Its signal scope has nothing to
// refuse here: the interpreter is pid 1 of its own pid namespace, alone
// in it. Its abstract socket scope is what keeps the zygote's runs apart
// where they share its network namespace:
// TestRunsCannotReachEachOtherOverAbstractSockets.)
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
{"exec": attempt(execute), "tmp": attempt(tmp)}`

// TestLandlockConfinesTheRun: with Landlock, a run cannot exec a program
// and still writes in /tmp; without it, the exec replaces the runner (the
// run ends without a result).
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

	unconfined := clone(t, b)
	unconfined.noLandlock = true
	out = run(unconfined)
	assert.NotEqual(t, spi.KindOK, out.Kind, "without Landlock the exec replaces the runner: %+v", out)
}
