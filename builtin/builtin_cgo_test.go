//go:build cgo

package builtin

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

func init() {
	direct[wasmtime.Engine] = func() (spi.Backend, error) { return wasmtime.New(&wasmtime.Options{Fuel: 1 << 40}) }
}

// withCgoEngines returns the engine names a build with cgo registers:
// names plus quickjs-wasmtime, sorted.
func withCgoEngines(names []string) []string {
	out := append(slices.Clone(names), wasmtime.Engine)
	slices.Sort(out)
	return out
}

func TestSelectCPUPicksWasmtime(t *testing.T) {
	var r registry.Registry
	Register(&r)
	def, err := r.Default("javascript")
	require.NoError(t, err)
	assert.Equal(t, "quickjs", def.Engine, "wazero stays the default")

	e, err := r.Select("javascript", registry.Requirements{CPU: true})
	require.NoError(t, err)
	assert.Equal(t, wasmtime.Engine, e.Engine, "a flow that needs a CPU budget gets quickjs-wasmtime")
	assert.True(t, e.Capabilities.CPU)
}

func TestWasmtimeCPUBudgetStopsTheLoop(t *testing.T) {
	f := CPUBudgetFactory(wasmtime.Engine)
	require.NotNil(t, f)
	assert.Equal(t, declared(t, direct[wasmtime.Engine]), declared(t, f), "the budget factory builds the same engine")
	set, ok := Fixtures("javascript")
	require.True(t, ok)
	rep, err := conformance.Check(context.Background(), direct[wasmtime.Engine], &conformance.Options{
		Fixtures:  set,
		CPUBudget: f,
		Cases:     []string{"cpu_budget", "echo"},
	})
	require.NoError(t, err)
	require.Len(t, rep.Cases, 2)
	for _, c := range rep.Cases {
		assert.Equal(t, conformance.StatusPass, c.Status, "%s: %s", c.Name, c.Reason)
	}
}

func TestWasmtimeTypeScriptHasTheCPUBudget(t *testing.T) {
	f := CPUBudgetFactory(wasmtime.Engine + TypeScriptSuffix)
	require.NotNil(t, f)
	caps := declared(t, f)
	assert.Equal(t, "typescript", caps.Language)
	assert.True(t, caps.CPU)
}
