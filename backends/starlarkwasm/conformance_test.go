package starlarkwasm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/conformance"
	starlarkfixtures "github.com/sandbank/sandbank/fixtures/starlark"
	"github.com/sandbank/sandbank/spi"
)

// smallBudget is the step budget of the cpu_budget case's backend.
const smallBudget = 100_000

// TestConformance runs the kit over the backend with the Starlark fixture
// set (the in-process engine's). Every case must pass, memory, hard clock
// and input size included; only the four the Starlark set declares
// inapplicable are skipped (host_objects: a script cannot enumerate its
// predeclared names; async_value and host_concurrent: Starlark has no
// asynchrony; throw_named: its errors have no names), and deterministic,
// gated by Deterministic, and the files cases, gated by Files, which the
// backend does not declare. The host
// calls and the logs cases run across the guest boundary.
func TestConformance(t *testing.T) {
	set := starlarkfixtures.Set()
	factory := func() (spi.Backend, error) { return starlarkwasm.New(nil) }
	small := func() (spi.Backend, error) { return starlarkwasm.New(&starlarkwasm.Options{MaxSteps: smallBudget}) }
	rep, err := conformance.Check(context.Background(), factory, &conformance.Options{Fixtures: &set, CPUBudget: small})
	require.NoError(t, err)
	require.Equal(t, conformance.CaseNames(), caseNames(rep))
	skipped := map[string]bool{"host_objects": true, "async_value": true, "host_concurrent": true, "throw_named": true, "deterministic": true, "files_in": true, "files_out": true, "files_bounds": true}
	for _, c := range rep.Cases {
		t.Run(c.Name, func(t *testing.T) {
			want := conformance.StatusPass
			if skipped[c.Name] {
				want = conformance.StatusSkip
			}
			assert.Equal(t, want, c.Status, c.Reason)
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
