package quickjs

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWazeroInternals fails loudly when a wazero upgrade changes what
// wazero_internals.go relies on. Parked mode is correct only for the
// version the file was checked against: on an upgrade, re-read wazero's
// snapshot (internal/engine/wazevo/call_engine.go: snapshot.stack and
// doRestore), its ModuleInstance.Globals and Tables, then update this
// test.
func TestWazeroInternals(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	version := ""
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "github.com/tetratelabs/wazero" {
			version = f[1]
		}
		if len(f) >= 1 && f[0] == "replace" && strings.Contains(line, "github.com/tetratelabs/wazero") {
			version = "replaced"
		}
	}
	require.Equal(t, "v1.12.0", version, "wazero changed: parked mode reaches into wazero's internals (wazero_internals.go); re-verify them against the new version before changing this test")

	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	require.NoError(t, b.Warm(t.Context()))
	p := b.poolFor(DefaultMemoryBytes)
	require.NotNil(t, p)
	inst := p.take()
	require.NotNil(t, inst, "Warm must leave a parked instance")
	defer func() { require.True(t, p.put(inst)) }()

	// The snapshot's stack is found, and is the array a restore makes live.
	require.NotEmpty(t, inst.stack)
	again, err := snapshotStack(inst.snap)
	require.NoError(t, err)
	assert.Same(t, &inst.stack[0], &again[0])
	// The module has exactly three mutable globals: __stack_pointer, whose
	// value at the park point lies inside the C stack, the stack pass's
	// low-water mark, and the stop check's budget, which the rewrite
	// added last.
	require.Len(t, inst.internals.getters, 3)
	sp := inst.globals[0]
	assert.Greater(t, sp, uint64(b.layout.Bottom))
	assert.LessOrEqual(t, sp, uint64(b.layout.Top))
	// Writing a global through the internals is seen by the module.
	moved := slices.Clone(inst.globals)
	moved[0] = sp - 16
	inst.internals.setGlobals(moved)
	assert.Equal(t, sp-16, inst.internals.globals()[0])
	inst.internals.setGlobals(inst.globals)
	// One function table, read in place.
	require.Len(t, inst.tables, 1)
	assert.NotEmpty(t, inst.tables[0])
	assert.True(t, inst.internals.tablesEqual(inst.tables))

	_, err = snapshotStack(nil)
	assert.ErrorIs(t, err, errInternals)
	_, err = inspectModule(nil)
	assert.ErrorIs(t, err, errInternals)
}
