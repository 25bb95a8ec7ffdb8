package quickjs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestInternalsProbePasses: with the pinned wazero, the probe New runs
// finds what parked mode needs, and a parked backend stays parked.
func TestInternalsProbePasses(t *testing.T) {
	require.NoError(t, probeInternals())
	b := newBackend(t, nil)
	assert.Equal(t, ModeParked, b.Mode())
	assert.NoError(t, b.ParkedModeError())
}

// TestIncompatibleWazeroFallsBackToFresh: when the probe fails (simulated:
// the wazero of a consumer's build no longer has the internals), New
// returns a backend in ModeFresh that says why, and it runs; the failure
// is found in New, never at run time.
func TestIncompatibleWazeroFallsBackToFresh(t *testing.T) {
	real := parkedInternals
	t.Cleanup(func() { parkedInternals = real })
	parkedInternals = func() error { return errors.Join(errInternals, errors.New("simulated")) }

	b := newBackend(t, &Options{ColdStartAllowance: 10 * time.Minute})
	assert.Equal(t, ModeFresh, b.Mode())
	assert.ErrorIs(t, b.ParkedModeError(), errInternals)
	assert.Equal(t, spi.OK(json.RawMessage(`2`)), eval(t, b, `1 + 1`, "", spi.Limits{}))
	assert.Zero(t, b.reuses.Load(), "no run used a parked instance")

	// A backend that asked for ModeFresh has nothing to report.
	fresh := newBackend(t, &Options{Mode: ModeFresh})
	assert.NoError(t, fresh.ParkedModeError())
	_, _ = fresh.Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte("null")})
}

// TestInternalsProbeMatchesItsSource rebuilds internals_probe.wasm from
// its .wat with wat2wasm and fails when the committed module differs.
func TestInternalsProbeMatchesItsSource(t *testing.T) {
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not installed (Debian package wabt)")
	}
	out := filepath.Join(t.TempDir(), "probe.wasm")
	msg, err := exec.Command(tool, "internals_probe.wat", "-o", out).CombinedOutput()
	require.NoError(t, err, "%s", msg)
	built, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(built, internalsProbeWasm), "internals_probe.wasm differs from its .wat; run go generate ./backends/quickjs/")
}
