// Package conformancetest runs the conformance kit from a Go test: one
// subtest per case, failing with the rule the backend broke or skipping
// with the reason a case does not apply.
//
//	func TestConformance(t *testing.T) {
//		conformancetest.Run(t, func() (spi.Backend, error) { return mybackend.New(nil) }, nil)
//	}
//
// It is a package of its own, as testing/slogtest is, so that package
// conformance (which the sandbank binary's matrix command runs) links no
// package testing. A program that runs the kit calls [conformance.Check].
package conformancetest

import (
	"testing"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/spi"
)

// Run runs the kit from a test. When tb is a *testing.T each case is a
// subtest (t.Run(case)) that fails with the case's reason, or skips with
// it for a gated case; any other testing.TB (a *testing.B, a *testing.F)
// gets one Errorf per failing case. Run calls tb.Helper, so a failure
// points at the caller's test. A refusal fails tb at once with its
// message. It returns the report.
func Run(tb testing.TB, factory spi.Factory, opts *conformance.Options) *conformance.Report {
	tb.Helper()
	suite, err := conformance.Prepare(factory, opts)
	if err != nil {
		tb.Fatal(err.Error())
		return nil
	}
	// Before any case runs, a failed result is the probe backend's.
	for _, c := range suite.Report().Cases {
		if c.Status == conformance.StatusFail {
			tb.Errorf("conformance: %s", c.Reason)
		}
	}
	t, subtests := tb.(*testing.T)
	for _, name := range suite.Cases() {
		if !subtests {
			if res := suite.Run(tb.Context(), name); res.Status == conformance.StatusFail {
				tb.Errorf("conformance case %s failed: %s", name, res.Reason)
			}
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Helper()
			res := suite.Run(t.Context(), name)
			switch res.Status {
			case conformance.StatusSkip:
				t.Skip(res.Reason)
			case conformance.StatusFail:
				t.Errorf("conformance case %s failed: %s", name, res.Reason)
			}
		})
	}
	return suite.Report()
}
