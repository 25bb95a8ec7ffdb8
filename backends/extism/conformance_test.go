package extism_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/spi"
)

// TestConformance runs the kit over the backend with the wasm fixture set.
// Every case must pass, except:
//
//   - cpu_budget, skipped: the backend declares no CPU budget.
//   - no_network, which may instead fail for one stated reason only. An
//     Extism host refuses a request to a host that is not allowed by
//     trapping inside the HTTP host function, and a wasm plugin cannot catch
//     a trap, so the probe ends in a typed scriptError naming the refused
//     URL instead of its report (the kit then also checks that the canary
//     saw no request, and that part must hold). The kit asks for the report;
//     until it accepts a refusal by abort for this case, the test pins the
//     exact failure, so any other no_network failure still fails it.
func TestConformance(t *testing.T) {
	set := wasm.Set()
	factory := func() (spi.Backend, error) { return extism.New(nil) }
	rep, err := conformance.Check(context.Background(), factory, &conformance.Options{Fixtures: &set})
	require.NoError(t, err)
	require.Equal(t, conformance.CaseNames(), caseNames(rep))
	for _, c := range rep.Cases {
		t.Run(c.Name, func(t *testing.T) {
			switch c.Name {
			case "cpu_budget":
				assert.Equal(t, conformance.StatusSkip, c.Status, c.Reason)
			case "no_network":
				if c.Status == conformance.StatusPass {
					return
				}
				assert.Equal(t, conformance.StatusFail, c.Status)
				assert.True(t, strings.HasPrefix(c.Reason, `no_network: the network probe must finish with its report, got typed scriptError trap "HTTP request to 'http://127.0.0.1:`), c.Reason)
				assert.Contains(t, c.Reason, "/sandbank-canary' is not allowed")
				assert.NotContains(t, c.Reason, "canary saw", "the canary was reached")
				assert.Equal(t, 1, strings.Count(c.Reason, "no_network:"), "more than one rule broke: %s", c.Reason)
			default:
				assert.Equal(t, conformance.StatusPass, c.Status, c.Reason)
			}
			if c.Reason != "" {
				t.Log(c.Reason)
			}
		})
	}
}

func caseNames(r *conformance.Report) []string {
	var names []string
	for _, c := range r.Cases {
		names = append(names, c.Name)
	}
	return names
}
