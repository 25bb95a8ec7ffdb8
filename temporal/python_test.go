package temporal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/registry"
)

// TestPythonActivity runs a Python script through the activity on the
// built-in registry, by language alone: the engine is resolved by package
// pool like any other (skipped where this machine cannot run the python
// engine's sandbox).
func TestPythonActivity(t *testing.T) {
	if err := python.Available(nil); err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	if _, err := python.New(nil); err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	reg := &registry.Registry{}
	builtin.Register(reg)
	acts, err := NewActivities(reg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = acts.Close() })
	req, err := NewRequest([]byte("import statistics\n{\"mean\": statistics.mean(input[\"xs\"]), \"big\": 2 ** 70}\n"), map[string]any{"xs": []int{1, 2, 3, 4}})
	require.NoError(t, err)
	req.Language = "python"
	rec, err, attempts := runCase(t, acts, oneRunInput{Request: req, MaximumAttempts: 1}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, attempts)
	assert.JSONEq(t, `{"mean": 2.5, "big": 1180591620717411303424}`, string(rec.Value))
	assert.Equal(t, "python", rec.Receipt.Engine)
}
