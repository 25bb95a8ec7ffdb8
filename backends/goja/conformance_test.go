package goja_test

import (
	"testing"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/conformance/conformancetest"
	"github.com/sandbank/sandbank/spi"
)

// TestConformance runs the kit with the unchanged JavaScript fixtures. The
// only skips allowed are the cases gated by what goja honestly lacks: a
// memory limit, a hard wall clock and a CPU budget, and host_exact, which
// the JavaScript set declares inapplicable (its numbers are doubles).
func TestConformance(t *testing.T) {
	report := conformancetest.Run(t, func() (spi.Backend, error) { return goja.New(nil) }, nil)
	allowed := map[string]bool{
		"runaway_native":  true, // WallClock hard or Memory
		"allocation_bomb": true, // Memory
		"memory_limit":    true, // Memory
		"input_too_big":   true, // Memory
		"cpu_budget":      true, // CPU
		"abort_mid_run":   true, // WallClock hard
		"host_clock":      true, // HostCalls and WallClock hard
		"host_exact":      true, // declared inapplicable by the JavaScript set
		"deterministic":   true, // Deterministic
		"files_in":        true, // Files
		"files_out":       true, // Files
		"files_bounds":    true, // Files
	}
	for _, c := range report.Cases {
		t.Logf("%-16s %-4s %8v %s", c.Name, c.Status, c.Duration.Round(1e6), c.Reason)
		if c.Status == conformance.StatusSkip && !allowed[c.Name] {
			t.Errorf("%s was skipped: %s", c.Name, c.Reason)
		}
	}
}
