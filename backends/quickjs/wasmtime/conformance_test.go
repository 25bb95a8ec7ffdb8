//go:build cgo

package wasmtime_test

import (
	"testing"

	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/conformance/conformancetest"
	"github.com/sandbank/sandbank/spi"
)

// smallFuel is the CPU budget of the kit's cpu_budget case: enough for
// the wrapper to report, a small fraction of a millisecond of a loop.
const smallFuel = 100_000

// TestConformance runs the kit with the unchanged JavaScript fixtures, on
// a backend as configured by default (no CPU budget: only cpu_budget may
// be skipped, for the declared reason) and on one with a CPU budget (no
// case may be skipped but host_exact, which the JavaScript set declares
// inapplicable: its numbers are doubles).
func TestConformance(t *testing.T) {
	for _, fuel := range []bool{false, true} {
		name, main, opts := "default", &wasmtime.Options{}, (*conformance.Options)(nil)
		if fuel {
			name, main.Fuel = "fuel", wasmtime.MaxFuel
			opts = &conformance.Options{
				CPUBudget: func() (spi.Backend, error) { return wasmtime.New(&wasmtime.Options{Fuel: smallFuel}) },
			}
		}
		t.Run(name, func(t *testing.T) {
			report := conformancetest.Run(t, func() (spi.Backend, error) { return wasmtime.New(main) }, opts)
			for _, c := range report.Cases {
				t.Logf("%-16s %-4s %8v %s", c.Name, c.Status, c.Duration.Round(1e6), c.Reason)
				if c.Status == conformance.StatusSkip && (fuel || c.Name != "cpu_budget") && c.Name != "host_exact" && c.Name != "deterministic" {
					t.Errorf("%s was skipped: %s", c.Name, c.Reason)
				}
			}
		})
	}
}
