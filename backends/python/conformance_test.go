//go:build linux

package python_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/conformance"
	pyfixtures "github.com/sandbank/sandbank/fixtures/python"
	"github.com/sandbank/sandbank/spi"
)

// TestConformance runs the kit over the backend with the Python fixture
// set. Every case must pass: the backend declares every capability and
// the set declares no case inapplicable; but where runs get no cgroup
// (python.KernelBounds), the backend does not declare the memory limit,
// and the kit skips the cases it gates, saying so.
func TestConformance(t *testing.T) {
	needSandbox(t)
	set := pyfixtures.Set()
	factory := func() (spi.Backend, error) { return python.New(nil) }
	small := func() (spi.Backend, error) { return python.New(&python.Options{CPUTime: 500 * time.Millisecond}) }
	rep, err := conformance.Check(context.Background(), factory, &conformance.Options{Fixtures: &set, CPUBudget: small})
	require.NoError(t, err)
	for _, c := range rep.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if err := python.KernelBounds(); err != nil && c.Status == conformance.StatusSkip && strings.HasPrefix(c.Reason, "gated by Memory") {
				t.Skipf("%s (%v)", c.Reason, err)
			}
			if c.Name == "deterministic" { // python does not declare Deterministic
				assert.Equal(t, conformance.StatusSkip, c.Status, c.Reason)
				return
			}
			assert.Equal(t, conformance.StatusPass, c.Status, c.Reason)
			if c.Reason != "" {
				t.Log(c.Reason)
			}
		})
	}
}
