package quickjs_test

import (
	"testing"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/spi"
)

// TestConformance runs the kit over both modes: parked instances (the
// default) and a fresh instance per run.
func TestConformance(t *testing.T) {
	for _, mode := range []quickjs.Mode{quickjs.ModeParked, quickjs.ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			report := conformance.Run(t, func() (spi.Backend, error) { return quickjs.New(&quickjs.Options{Mode: mode}) }, nil)
			for _, c := range report.Cases {
				t.Logf("%-16s %-4s %8v %s", c.Name, c.Status, c.Duration.Round(1e6), c.Reason)
				if c.Status == conformance.StatusSkip && c.Name != "cpu_budget" {
					t.Errorf("%s was skipped: %s", c.Name, c.Reason)
				}
			}
		})
	}
}
