package quickjs_test

import (
	"testing"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/spi"
)

func TestConformance(t *testing.T) {
	report := conformance.Run(t, func() (spi.Backend, error) { return quickjs.New(nil) }, nil)
	for _, c := range report.Cases {
		t.Logf("%-16s %-4s %8v %s", c.Name, c.Status, c.Duration.Round(1e6), c.Reason)
		if c.Status == conformance.StatusSkip && c.Name != "cpu_budget" {
			t.Errorf("%s was skipped: %s", c.Name, c.Reason)
		}
	}
}
