//go:build linux

package python

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pyfixtures "github.com/sandbank/sandbank/fixtures/python"
	"github.com/sandbank/sandbank/spi"
)

// TestEscapeProbeSeesABoundHostDirectory shows the escape probe can fail,
// without ever running it outside a sandbox: in a sandbox that also binds
// the host's /etc (read-only), it reports the host's files. The kit runs
// the same probe on the real sandbox, where it finds nothing.
func TestEscapeProbeSeesABoundHostDirectory(t *testing.T) {
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Skip("this machine has no /etc/passwd")
	}
	b := clone(t, backendOrSkip(t))
	b.lay.args = append(slices.Clone(b.lay.args), "--ro-bind", "/etc", "/etc")
	script, err := pyfixtures.Set().Script("no_escape")
	require.NoError(t, err)
	out, err := b.Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage("{}"),
		Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20}})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	var r struct {
		Found []string `json:"found"`
	}
	require.NoError(t, json.Unmarshal(out.Value, &r))
	assert.Contains(t, r.Found, "file:/etc/passwd")
	assert.Contains(t, r.Found, "file:listdir(/) beyond the interpreter")
	assert.NotContains(t, r.Found, "fork", "the rest of the sandbox still holds")
}
