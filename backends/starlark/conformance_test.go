package starlark_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/conformance"
	starlarkfixtures "github.com/sandbank/sandbank/fixtures/starlark"
	"github.com/sandbank/sandbank/spi"
)

// smallBudget is the step budget of the cpu_budget case's backend.
const smallBudget = 100_000

// TestConformance runs the kit over the backend with the Starlark fixture
// set. Every case must pass, except the ones gated by what the backend
// honestly lacks, which must be skipped:
//
//   - allocation_bomb, memory_limit and input_too_big: gated by Memory.
//   - host_objects, async_value, host_concurrent and throw_named: the
//     Starlark fixture set declares them inapplicable (a script cannot
//     enumerate its predeclared names, has no asynchrony, and its errors
//     have no names).
//   - host_clock: gated by HostCalls and WallClock hard.
//   - runaway_native: gated by WallClock hard or Memory.
//   - abort_mid_run: gated by WallClock hard.
//   - files_in, files_out and files_bounds: gated by Files.
func TestConformance(t *testing.T) {
	set := starlarkfixtures.Set()
	factory := func() (spi.Backend, error) { return starlark.New(nil) }
	small := func() (spi.Backend, error) { return starlark.New(&starlark.Options{MaxSteps: smallBudget}) }
	rep, err := conformance.Check(context.Background(), factory, &conformance.Options{Fixtures: &set, CPUBudget: small})
	require.NoError(t, err)
	require.Equal(t, conformance.CaseNames(), caseNames(rep))
	skipped := map[string]bool{"allocation_bomb": true, "memory_limit": true, "host_objects": true, "async_value": true, "host_concurrent": true, "input_too_big": true, "runaway_native": true, "abort_mid_run": true, "throw_named": true, "host_clock": true, "deterministic": true, "files_in": true, "files_out": true, "files_bounds": true}
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

// TestConformanceRefusesWithoutFixtures: the kit has no default set for
// Starlark, so a run without fixtures is refused rather than passing
// vacuously.
func TestConformanceRefusesWithoutFixtures(t *testing.T) {
	factory := func() (spi.Backend, error) { return starlark.New(nil) }
	for _, opts := range []*conformance.Options{nil, {}} {
		rep, err := conformance.Check(context.Background(), factory, opts)
		require.Error(t, err)
		assert.Nil(t, rep)
		assert.Contains(t, err.Error(), `no fixtures for language "starlark"`)
	}
}

func caseNames(r *conformance.Report) []string {
	var names []string
	for _, c := range r.Cases {
		names = append(names, c.Name)
	}
	return names
}
