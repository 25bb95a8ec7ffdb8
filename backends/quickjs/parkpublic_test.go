package quickjs

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
	"github.com/sandbank/sandbank/spi"
)

// TestParkedModeUsesPublicAPIOnly: parked mode reaches nothing of
// wazero's but its API. No file of the package (tests aside) imports
// reflect or unsafe, the tools of reaching into another package's
// unexported state, and a parked backend stays parked: nothing is
// checked at run time that could fail with another wazero.
func TestParkedModeUsesPublicAPIOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, im := range f.Imports {
			path, err := strconv.Unquote(im.Path.Value)
			require.NoError(t, err)
			assert.NotContains(t, []string{"reflect", "unsafe"}, path, "%s imports %s", name, path)
			assert.False(t, strings.Contains(path, "wazero/internal"), "%s imports %s", name, path)
		}
		checked++
	}
	require.Greater(t, checked, 10)

	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	assert.Equal(t, ModeParked, b.Mode())
	assert.NoError(t, b.ParkedModeError())
	for i := range 3 {
		require.Equal(t, spi.OK(json.RawMessage(strconv.Itoa(i))), eval(t, b, `input`, strconv.Itoa(i), spi.Limits{}))
	}
	assert.Equal(t, int64(2), b.reuses.Load())
}

// withTableWrite returns the QuickJS binary with one more function, never
// called, that writes the function table.
func withTableWrite(t *testing.T) []byte {
	m, err := wasmrewrite.Decode(quickJSWASM)
	require.NoError(t, err)
	void := -1
	for i, ft := range m.Types {
		if len(ft.Params) == 0 && len(ft.Results) == 0 {
			void = i
		}
	}
	require.GreaterOrEqual(t, void, 0, "QuickJS has a function type () -> ()")
	m.Funcs = append(m.Funcs, uint32(void))
	// i32.const 0, ref.null func, table.set 0, end
	m.Code = append(m.Code, wasmrewrite.Body{Code: []byte{0x41, 0, 0xd0, 0x70, 0x26, 0, 0x0b}})
	return m.Encode()
}

// TestParkedModeRefusesAWritableTable: a restore does not cover the
// function table, so parked mode needs the proof that no table is ever
// written. Fed a QuickJS binary that could write its table, New falls
// back to ModeFresh and says why, and the backend runs; the refusal is
// found in New, never at run time. Without the proof in the pass list,
// the backend would park the module.
func TestParkedModeRefusesAWritableTable(t *testing.T) {
	shipped := quickJSWASM
	t.Cleanup(func() { quickJSWASM = shipped })
	quickJSWASM = withTableWrite(t)

	b := newBackend(t, &Options{Mode: ModeParked, ColdStartAllowance: 10 * time.Minute})
	assert.Equal(t, ModeFresh, b.Mode())
	require.ErrorIs(t, b.ParkedModeError(), wasmrewrite.ErrTableWritten)
	assert.Contains(t, b.ParkedModeError().Error(), "table.set")
	assert.Equal(t, spi.OK(json.RawMessage(`2`)), eval(t, b, `1 + 1`, "", spi.Limits{}))
	assert.Zero(t, b.reuses.Load(), "no run used a parked instance")

	// A backend that asked for ModeFresh has nothing to report.
	fresh := newBackend(t, &Options{Mode: ModeFresh})
	assert.NoError(t, fresh.ParkedModeError())
}

// TestParkedGlobalsThroughExports: the module's mutable globals are
// reached through the exports the export-globals pass adds: exactly four
// in QuickJS rewritten with the stop check, __stack_pointer (its value at
// the park point inside the C stack), then the globals the passes add in
// their order: the stack pass's low-water mark, the memory-size pass's
// guest-visible size and the stop check's budget; a write through them is
// seen.
func TestParkedGlobalsThroughExports(t *testing.T) {
	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	require.NoError(t, b.Warm(t.Context()))
	p := b.pools.For(DefaultMemoryBytes)
	require.NotNil(t, p)
	inst, ok := p.Take()
	require.True(t, ok, "Warm must leave a parked instance")
	defer func() { require.True(t, p.Put(inst)) }()

	require.Len(t, inst.globals, 4)
	require.Len(t, inst.globalVals, 4)
	sp := inst.globalVals[0]
	assert.Greater(t, sp, uint64(b.layout.Bottom))
	assert.LessOrEqual(t, sp, uint64(b.layout.Top))
	moved := slices.Clone(inst.globalVals)
	moved[0] = sp - 16
	inst.globals.Restore(moved)
	assert.Equal(t, sp-16, inst.globals.Save()[0])
	inst.globals.Restore(inst.globalVals)
}

// TestParkedInstanceRetires: an instance serves park.MaxRestores runs, then
// is replaced (every snapshot's stack is a little longer than the one it
// was taken from). With a limit of 3, nine runs on a pool of one need
// three instances, and every run is correct.
func TestParkedInstanceRetires(t *testing.T) {
	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 1})
	served := map[*instance]int{}
	b.onRun = func(inst *instance) {
		inst.MaxRestores = 3
		served[inst]++
	}
	for i := range 9 {
		require.Equal(t, spi.OK(json.RawMessage(strconv.Itoa(i))), eval(t, b, `input`, strconv.Itoa(i), spi.Limits{}))
	}
	assert.Len(t, served, 3)
	for _, n := range served {
		assert.Equal(t, 3, n)
	}
}

// TestGuestPassOrder: the pass list puts park-read before the preemption
// pass, export-globals after it (so that the budget global is exported)
// and the static-tables proof last; fresh mode has none of parked mode's
// passes.
func TestGuestPassOrder(t *testing.T) {
	set, err := (&Options{}).settings()
	require.NoError(t, err)
	var names []string
	for _, p := range guestPasses(set) {
		names = append(names, p.Name)
	}
	preempt := slices.Index(names, wasmrewrite.PreemptVersion)
	globals := slices.Index(names, wasmrewrite.ExportGlobalsVersion)
	require.GreaterOrEqual(t, preempt, 0)
	assert.Greater(t, globals, preempt, "export-globals must follow every pass that adds a global")
	assert.Less(t, slices.Index(names, wasmrewrite.ParkReadVersion), preempt)
	assert.Equal(t, wasmrewrite.StaticTablesVersion, names[len(names)-1])

	set.mode = ModeFresh
	assert.NotContains(t, wasmrewrite.Version(guestPasses(set)...), wasmrewrite.ParkReadVersion, "fresh mode runs without parked mode's passes")
}
