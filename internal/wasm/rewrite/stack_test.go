package rewrite

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"testing"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

//go:generate wat2wasm --debug-names testdata/stack.wat -o testdata/stack.wasm
//go:embed testdata/stack.wasm
var stackWasm []byte

// errOverflow is what the test's stack_overflow host function panics with.
var errOverflow = errors.New("test: stack overflow")

// stackGuest is the test module rewritten by a stack pass, instantiated.
type stackGuest struct {
	mod       api.Module
	overflows int
	region    StackRegion
}

func newStackGuest(t *testing.T, s Stack, apply func(*Module) error) *stackGuest {
	t.Helper()
	m, err := Decode(stackWasm)
	require.NoError(t, err)
	region, err := s.Plan(m)
	require.NoError(t, err)
	require.NoError(t, apply(m))
	wasm := m.Encode()

	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig()) // the interpreter's call stack ends at 2,000 frames
	t.Cleanup(func() { rt.Close(ctx) })
	g := &stackGuest{region: region}
	_, err = rt.NewHostModuleBuilder("env").NewFunctionBuilder().WithFunc(func() {}).Export("tick").Instantiate(ctx)
	require.NoError(t, err)
	_, err = rt.NewHostModuleBuilder(PreemptModule).NewFunctionBuilder().
		WithFunc(func() { g.overflows++; panic(errOverflow) }).Export(StackOverflowName).
		Instantiate(ctx)
	require.NoError(t, err)
	g.mod, err = rt.Instantiate(ctx, wasm)
	require.NoError(t, err)
	return g
}

func (g *stackGuest) call(t *testing.T, name string, args ...uint64) (uint64, error) {
	t.Helper()
	res, err := g.mod.ExportedFunction(name).Call(context.Background(), args...)
	if err != nil {
		return 0, err
	}
	return res[0], nil
}

// below returns a copy of the memory below the region's limit: what a
// stack overflow would overwrite.
func (g *stackGuest) below(t *testing.T) []byte {
	t.Helper()
	b, ok := g.mod.Memory().Read(0, g.region.Limit-StackRedZone)
	require.True(t, ok)
	return bytes.Clone(b)
}

func TestStackPassGivesTheStackItsRegion(t *testing.T) {
	s := Stack{Size: 128 << 10, Guard: 1024}
	g := newStackGuest(t, s, s.Apply)
	assert.Equal(t, StackRegion{Bottom: 2 << 16, Top: 2<<16 + 128<<10, Limit: 2<<16 + 1024 + StackRedZone}, g.region)
	assert.Equal(t, uint32(2<<16+128<<10), g.mod.Memory().Size(), "the memory grows by the stack")
	sp, err := g.call(t, "sp")
	require.NoError(t, err)
	assert.Equal(t, uint64(g.region.Top), sp)

	low := g.mod.ExportedGlobal(StackLowName)
	require.NotNil(t, low)
	assert.Equal(t, uint64(g.region.Top), low.Get(), "the low-water mark starts at the top")
	// 64-byte frames: about 2,000 fit in 128 KiB.
	got, err := g.call(t, "recurse", 1500)
	require.NoError(t, err)
	assert.Equal(t, uint64(1500*1501/2), got)
	assert.Equal(t, uint64(g.region.Top-1501*64), low.Get(), "the low-water mark is the deepest frame")
	got, err = g.call(t, "leaf", 42)
	require.NoError(t, err)
	assert.Equal(t, uint64(42), got)
	got, err = g.call(t, "alloca", 100)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), got)
	assert.Zero(t, g.overflows)
}

// TestStackPassTrapsBeforeTheRegionEnds overflows the stack: the host
// function is called, and nothing below the guard is written. Without the
// check (the pass's other changes alone) the same recursion writes on
// into the static data and returns a value.
func TestStackPassTrapsBeforeTheRegionEnds(t *testing.T) {
	s := Stack{Size: 128 << 10, Guard: 1024}
	for name, depth := range map[string]uint64{"recursion": 3000, "alloca": 200 << 10, "alloca wrapping around": 1 << 20} {
		t.Run(name, func(t *testing.T) {
			g := newStackGuest(t, s, s.Apply)
			before := g.below(t)
			var err error
			if name != "recursion" {
				_, err = g.call(t, "alloca", depth)
			} else {
				_, err = g.call(t, "recurse", depth)
			}
			require.ErrorIs(t, err, errOverflow)
			assert.Equal(t, 1, g.overflows)
			assert.True(t, bytes.Equal(before, g.below(t)), "the overflow wrote below the stack's guard")
			// The instance is not reused after an overflow in production;
			// here the stack pointer shows where the guest stopped.
			sp, err := g.call(t, "sp")
			require.NoError(t, err)
			assert.False(t, uint32(sp) >= g.region.Limit && uint32(sp) <= g.region.Top, "stack pointer %d", sp)
		})
	}

	t.Run("without the check", func(t *testing.T) {
		g := newStackGuest(t, s, func(m *Module) error { return s.withoutCheck(m) })
		before := g.below(t)
		_, err := g.call(t, "recurse", 3000)
		require.NoError(t, err, "nothing stops the recursion")
		assert.Zero(t, g.overflows)
		assert.False(t, bytes.Equal(before, g.below(t)), "the recursion should have written below the stack")
	})
}

// withoutCheck applies the stack pass with its check replaced by nops,
// for the test that shows what the check prevents.
func (s Stack) withoutCheck(m *Module) error {
	p, err := s.plan(m)
	if err != nil {
		return err
	}
	nImp := m.ImportedFuncs()
	if err := s.Apply(m); err != nil {
		return err
	}
	check := p.region.check(p.sp, nImp, lowIndex(m))
	for i := range m.Code {
		m.Code[i].Code = bytes.ReplaceAll(m.Code[i].Code, check, bytes.Repeat([]byte{0x01}, len(check)))
	}
	return nil
}

// lowIndex is the index of the global the stack pass exports as
// StackLowName.
func lowIndex(m *Module) uint32 {
	for _, e := range m.Exports {
		if e.Name == StackLowName {
			return e.Index
		}
	}
	panic("no " + StackLowName)
}

// TestStackPassChecksEverySetOfQuickJS rewrites QuickJS and checks that
// every global.set of the stack pointer is followed by the check, and
// that the result validates.
func TestStackPassChecksEverySetOfQuickJS(t *testing.T) {
	s := Stack{Guard: 1024}
	m, err := Decode(quickjswasi.QuickJSWASM)
	require.NoError(t, err)
	p, err := s.plan(m)
	require.NoError(t, err)
	t.Logf("QuickJS: stack [%d, %d), limit %d; %d writes of the stack pointer", p.region.Bottom, p.region.Top, p.region.Limit, p.written)
	require.NoError(t, s.Apply(m))
	check := p.region.check(p.sp, m.ImportedFuncs()-1, lowIndex(m))
	sets, checked := 0, 0
	for _, b := range m.Code {
		require.NoError(t, walk(b.Code, func(in instr) error {
			if in.op == opGlobalSet && (&reader{b: b.Code[in.start+1 : in.end]}).u32() == p.sp {
				sets++
				if bytes.HasPrefix(b.Code[in.end:], check) {
					checked++
				}
			}
			return nil
		}))
	}
	assert.Equal(t, p.written, sets)
	assert.Equal(t, sets, checked, "a write of the stack pointer without the check after it")
	assert.Equal(t, uint32(p.region.Top), func() uint32 { v, _ := ConstI32(m.Globals[p.sp].Init); return uint32(v) }())

	out := m.Encode()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	_, err = rt.CompileModule(ctx, out)
	require.NoError(t, err, "the rewritten module validates")
	// Both passes, in the order of the backends.
	both, err := RewriteWith(quickjswasi.QuickJSWASM, s.Pass(), PreemptPass)
	require.NoError(t, err)
	_, err = rt.CompileModule(ctx, both)
	require.NoError(t, err, "stack then preempt validates")
}

// TestStackPassRefuses checks that a module whose stack pointer the pass
// cannot identify, or uses in a shape it does not know, is refused.
func TestStackPassRefuses(t *testing.T) {
	body := func(code ...byte) func(*Module) {
		return func(m *Module) { m.Code[0].Code = append(code, opEnd) }
	}
	for _, tc := range []struct {
		name   string
		stack  Stack
		mutate func(*Module)
	}{
		{"no name section", Stack{}, func(m *Module) { m.Names = nil }},
		{"exported", Stack{}, func(m *Module) {
			m.Exports = append(m.Exports, Export{Name: "sp", Kind: KindGlobal, Index: 0})
		}},
		{"immutable", Stack{}, func(m *Module) { m.Globals[0].Mutable = false }},
		{"not a constant", Stack{}, func(m *Module) { m.Globals[0].Init = []byte{opGlobalGet, 1, opEnd} }},
		{"maximum too small", Stack{}, func(m *Module) { m.Memories[0].HasMax, m.Memories[0].Max = true, 3 }},
		{"starts beyond the memory", Stack{}, func(m *Module) { m.Memories[0].Min = 0 }},
		{"size not in pages", Stack{Size: 100000}, func(*Module) {}},
		{"guard too large", Stack{Size: 64 << 10, Guard: 32 << 10}, func(*Module) {}},
		{"exports the low-water mark already", Stack{}, func(m *Module) {
			m.Exports = append(m.Exports, Export{Name: StackLowName, Kind: KindFunc, Index: 1})
		}},
		{"imports the host function already", Stack{}, func(m *Module) {
			m.Imports = append(m.Imports, Import{Module: PreemptModule, Name: StackOverflowName, Kind: KindFunc})
		}},
		{"no function sets it", Stack{}, func(m *Module) {
			for i := range m.Code {
				m.Code[i].Code = []byte{opEnd}
			}
		}},
		{"frame stored before the set", Stack{}, body(
			opGlobalGet, 0, opI32Const, 64, opI32Sub, opLocalTee, 1, opI32Const, 0, opI32Store, 2, 0,
			opLocalGet, 1, opGlobalSet, 0)},
		{"an address below the frame", Stack{}, body(
			opGlobalGet, 0, opI32Const, 64, opI32Sub, opLocalTee, 1, opGlobalSet, 0,
			opLocalGet, 1, opI32Const, 8, opI32Sub, opI32Const, 0, opI32Store, 2, 0)},
		{"a caller that never sets it", Stack{}, body(
			opGlobalGet, 0, opI32Const, 16, opI32Sub, opI32Const, 0, opI32Store, 2, 0, opCall, 0)},
		{"a leaf frame beyond the red zone", Stack{}, body(
			opGlobalGet, 0, opI32Const, 0x80, 0x02, opI32Sub, opI32Const, 0, opI32Store, 2, 0)},
		{"a leaf frame beyond the red zone, from a local", Stack{}, body(
			opGlobalGet, 0, opLocalSet, 1, opLocalGet, 1, opI32Const, 0x80, 0x02, opI32Sub, opI32Const, 0, opI32Store, 2, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(stackWasm)
			require.NoError(t, err)
			tc.mutate(m)
			// The module with functions stripped is not checked for the
			// shapes' own sake: the refusal comes before anything changes.
			err = tc.stack.Apply(m)
			assert.ErrorIs(t, err, ErrStackShape)
			t.Log(err)
		})
	}
}
