//go:build cgo

package wasmtime_test

import (
	"testing"

	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/spi"
)

// smallFuel is the CPU budget of the kit's cpu_budget case: enough for
// the wrapper to report, a small fraction of a millisecond of a loop.
const smallFuel = 100_000

// TestConformance runs the kit with the unchanged JavaScript fixtures:
// every case must pass, none may be skipped (CPU included).
func TestConformance(t *testing.T) {
	report := conformance.Run(t, func() (spi.Backend, error) { return wasmtime.New(nil) }, &conformance.Options{
		CPUBudget: func() (spi.Backend, error) { return wasmtime.New(&wasmtime.Options{Fuel: smallFuel}) },
	})
	for _, c := range report.Cases {
		t.Logf("%-16s %-4s %8v %s", c.Name, c.Status, c.Duration.Round(1e6), c.Reason)
		if c.Status == conformance.StatusSkip {
			t.Errorf("%s was skipped: %s", c.Name, c.Reason)
		}
	}
}
