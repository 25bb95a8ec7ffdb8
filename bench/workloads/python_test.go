//go:build linux

package workloads_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/bench/workloads"
)

// TestReshapePythonReturnsTheExpectedValue runs reshape.py on the python
// engine (skipped where this machine cannot run its sandbox).
func TestReshapePythonReturnsTheExpectedValue(t *testing.T) {
	if err := python.Available(nil); err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	b, err := python.New(nil)
	if err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	script, ok := workloads.Reshape("python")
	require.True(t, ok)
	assert.Equal(t, decode(t, workloads.ReshapeExpected()), decode(t, evaluate(t, b, script)))
}
