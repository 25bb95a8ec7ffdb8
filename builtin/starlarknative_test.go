package builtin

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlarknative"
	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

func init() {
	direct[starlarknative.Engine] = func() (spi.Backend, error) { return starlarknative.New(nil) }
}

// withNativeStarlark returns names plus starlark-native where it can
// run, sorted.
func withNativeStarlark(names []string) []string {
	if starlarknative.Available() != nil {
		return names
	}
	out := append(slices.Clone(names), starlarknative.Engine)
	slices.Sort(out)
	return out
}

// TestStarlarkDefault: starlark-native is the default of "starlark"
// where it can run, starlark-wasm elsewhere; both have a small-budget
// factory for the kit's cpu_budget case.
func TestStarlarkDefault(t *testing.T) {
	var r registry.Registry
	Register(&r)
	def, err := r.Default("starlark")
	require.NoError(t, err)
	assert.NotNil(t, CPUBudgetFactory(starlarkwasm.Engine))
	if err := starlarknative.Available(); err != nil {
		assert.Equal(t, starlarkwasm.Engine, def.Engine)
		t.Skipf("starlark-native is not available here: %v", err)
	}
	assert.Equal(t, starlarknative.Engine, def.Engine)
	assert.NotNil(t, CPUBudgetFactory(starlarknative.Engine))
}
