package builtin

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

func init() {
	direct[python.Engine] = func() (spi.Backend, error) { return python.New(nil) }
}

// withMachineEngines returns names plus python when this machine can run
// its sandbox, sorted.
func withMachineEngines(names []string) []string {
	if python.Available(nil) != nil {
		return names
	}
	out := append(slices.Clone(names), python.Engine)
	slices.Sort(out)
	return out
}

// TestPythonIsRegisteredOrMissing: python is registered, as the default of
// "python", exactly when Missing does not name it; otherwise Missing says
// why.
func TestPythonIsRegisteredOrMissing(t *testing.T) {
	var r registry.Registry
	Register(&r)
	_, lookupErr := r.Lookup(python.Engine)
	missing := Missing()
	if err := python.Available(nil); err != nil {
		require.Error(t, lookupErr)
		require.Len(t, missing, 1)
		assert.Equal(t, python.Engine, missing[0].Engine)
		assert.Equal(t, err.Error(), missing[0].Reason)
		t.Skipf("python is not available here: %v", err)
	}
	require.NoError(t, lookupErr)
	assert.Empty(t, missing)
	def, err := r.Default("python")
	require.NoError(t, err)
	assert.Equal(t, python.Engine, def.Engine)
	assert.NotNil(t, CPUBudgetFactory(python.Engine))
	set, ok := Fixtures("python")
	require.True(t, ok)
	assert.Contains(t, set.Cases(), "no_escape")
}

// TestMissingNamesWhatIsAbsent: with no bubblewrap, the reason names it.
func TestMissingNamesWhatIsAbsent(t *testing.T) {
	err := python.Available(&python.Options{Bubblewrap: "/nonexistent/bwrap"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bubblewrap")
}

// TestPackagesFactory: only python takes packages; its factory builds a
// backend with them (New refuses an invalid name).
func TestPackagesFactory(t *testing.T) {
	assert.Nil(t, PackagesFactory("quickjs", []string{"numpy"}, "", true))
	f := PackagesFactory(python.Engine, []string{"../x"}, "", true)
	if python.Available(nil) != nil {
		assert.Nil(t, f)
		return
	}
	require.NotNil(t, f)
	_, err := f()
	assert.ErrorContains(t, err, "top-level import name")
	b, err := PackagesFactory(python.Engine, []string{"numpy"}, "", true)()
	require.NoError(t, err)
	assert.NoError(t, b.(*python.Backend).Close())
}
