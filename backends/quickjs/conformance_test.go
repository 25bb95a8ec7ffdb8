package quickjs_test

import (
	"testing"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/conformance/conformancetest"
	"github.com/sandbank/sandbank/spi"
)

// smallFuel is the CPU budget of the kit's cpu_budget case: enough for
// cpu_light and the wrapper, a few milliseconds of a loop.
const smallFuel = 1_000_000

// bigFuel is the CPU budget of the main factory when the budget is on: a
// bound (minutes of work), not a budget.
const bigFuel = 1 << 40

// TestConformance runs the kit over both modes, parked instances (the
// default) and a fresh instance per run, each as configured by default
// (no CPU budget: only cpu_budget may be skipped) and with the CPU budget
// on (no case may be skipped but host_exact, which the JavaScript set
// declares inapplicable: its numbers are doubles).
// filesCase are the cases gated by Files, which this backend does not
// declare yet (issue 44): skipped.
var filesCase = map[string]bool{"files_in": true, "files_out": true, "files_bounds": true}

func TestConformance(t *testing.T) {
	for _, mode := range []quickjs.Mode{quickjs.ModeParked, quickjs.ModeFresh} {
		for _, fuel := range []bool{false, true} {
			name := mode.String()
			var opts *conformance.Options
			main := &quickjs.Options{Mode: mode}
			if fuel {
				name += "/fuel"
				main.Fuel = bigFuel
				opts = &conformance.Options{
					CPUBudget: func() (spi.Backend, error) { return quickjs.New(&quickjs.Options{Mode: mode, Fuel: smallFuel}) },
				}
			}
			t.Run(name, func(t *testing.T) {
				report := conformancetest.Run(t, func() (spi.Backend, error) { return quickjs.New(main) }, opts)
				for _, c := range report.Cases {
					t.Logf("%-16s %-4s %8v %s", c.Name, c.Status, c.Duration.Round(1e6), c.Reason)
					if c.Status == conformance.StatusSkip && (fuel || c.Name != "cpu_budget") && c.Name != "host_exact" && !filesCase[c.Name] {
						t.Errorf("%s was skipped: %s", c.Name, c.Reason)
					}
				}
			})
		}
	}
}
