package rewrite

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

//go:generate wat2wasm testdata/memsize.wat -o testdata/memsize.wasm
//go:generate wat2wasm testdata/memsize_nomax.wat -o testdata/memsize_nomax.wasm

//go:embed testdata/memsize.wasm
var memsizeWasm []byte // memory 1, max 8

//go:embed testdata/memsize_nomax.wasm
var memsizeNoMaxWasm []byte // memory 2, no max

// sized instantiates wasm, rewritten by the memory-size pass (and the
// preemption pass after it, as the backends run them) when rewrite is
// set, in a runtime whose memories stop at limitPages.
func sized(t *testing.T, wasm []byte, rewrite bool, limitPages uint32) api.Module {
	t.Helper()
	if rewrite {
		var err error
		if wasm, err = RewriteWith(wasm, MemorySizePass, PreemptPass); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithMemoryLimitPages(limitPages))
	t.Cleanup(func() { rt.Close(ctx) })
	h := &host{grant: 1 << 20}
	i32 := []api.ValueType{api.ValueTypeI32}
	if _, err := rt.NewHostModuleBuilder(PreemptModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(h.preempt), i32, i32).Export(PreemptName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func call1(t *testing.T, mod api.Module, name string, args ...uint64) int32 {
	t.Helper()
	out, err := call(t, mod, name, args...)
	if err != nil {
		t.Fatalf("%s%v: %v", name, args, err)
	}
	if len(out) == 0 {
		return 0
	}
	return int32(uint32(out[0]))
}

// TestMemorySizeSameAnswers runs the same sequence of memory.grow and
// memory.size on the original and the rewritten module: every answer is
// the same, successes, failures at the maximum and at the runtime's limit,
// and a count that overflows.
func TestMemorySizeSameAnswers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		wasm       []byte
		limitPages uint32
		grows      []uint64
	}{
		{"max 8", memsizeWasm, 1 << 16, []uint64{0, 1, 0, 2, 5, 4, 0xffffffff, 0x80000000, 0xfffffffc, 1, 0, 9, 1}},
		{"runtime limit 6", memsizeNoMaxWasm, 6, []uint64{1, 4, 3, 1, 0, 0xffffffff, 1 << 16, 1<<16 - 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := sized(t, tc.wasm, false, tc.limitPages)
			rewritten := sized(t, tc.wasm, true, tc.limitPages)
			failed := 0
			for _, n := range tc.grows {
				a, b := call1(t, orig, "grow", n), call1(t, rewritten, "grow", n)
				if a != b {
					t.Fatalf("memory.grow %d: original %d, rewritten %d", n, a, b)
				}
				if a == -1 {
					failed++
				}
				if a, b := call1(t, orig, "size"), call1(t, rewritten, "size"); a != b {
					t.Fatalf("memory.size after grow %d: original %d, rewritten %d", n, a, b)
				}
				if a, b := orig.Memory().Size(), rewritten.Memory().Size(); a != b {
					t.Fatalf("real size after grow %d: original %d, rewritten %d", n, a, b)
				}
			}
			if failed < 3 {
				t.Fatalf("only %d grows failed: the sequence must reach the limit", failed)
			}
		})
	}
}

// TestMemorySizeRestored sets the guest-visible size back, as a host
// restoring a park point does, and checks that the guest sees the
// restored size and grows from it, within the real memory first, and
// fails exactly where a memory of the restored size would.
func TestMemorySizeRestored(t *testing.T) {
	mod := sized(t, memsizeWasm, true, 1<<16)
	pages, ok := mod.ExportedGlobal(MemorySizeExport).(api.MutableGlobal)
	if !ok {
		t.Fatalf("the pass exports no mutable global %s", MemorySizeExport)
	}
	if got := pages.Get(); got != 1 {
		t.Fatalf("the global starts at %d pages, want the memory's minimum 1", got)
	}
	if got := call1(t, mod, "grow", 5); got != 1 {
		t.Fatalf("grow 5 = %d, want 1", got)
	}
	call1(t, mod, "store", 5<<16+8, 42) // in the sixth page, above the restored size
	pages.Set(1)                        // the restore
	if got := call1(t, mod, "size"); got != 1 {
		t.Fatalf("size after the restore = %d, want 1", got)
	}
	if real := mod.Memory().Size(); real != 6<<16 {
		t.Fatalf("real size %d, want 6 pages (memory never shrinks)", real)
	}
	// Within the real memory: no real growth, the old virtual size back.
	if got := call1(t, mod, "grow", 2); got != 1 {
		t.Fatalf("grow 2 = %d, want 1", got)
	}
	if real := mod.Memory().Size(); real != 6<<16 {
		t.Fatalf("real size %d after a grow within it, want 6 pages", real)
	}
	if got := call1(t, mod, "load", 5<<16+8); got != 42 {
		t.Fatalf("load = %d: the test's store must still be there (the host zeroes, not the pass)", got)
	}
	// Past the real memory: the real memory grows to the new size.
	if got := call1(t, mod, "grow", 4); got != 3 {
		t.Fatalf("grow 4 = %d, want 3", got)
	}
	if real := mod.Memory().Size(); real != 7<<16 {
		t.Fatalf("real size %d, want 7 pages", real)
	}
	// At the maximum: one more page fits, two do not, an overflowing
	// count does not, and a failure changes nothing.
	for _, n := range []uint64{2, 0xffffffff, 0xfffffffa} {
		if got := call1(t, mod, "grow", n); got != -1 {
			t.Fatalf("grow %d at 7 of 8 pages = %d, want -1", n, got)
		}
	}
	if got := call1(t, mod, "size"); got != 7 {
		t.Fatalf("size after failed grows = %d, want 7", got)
	}
	if got := call1(t, mod, "grow", 1); got != 7 {
		t.Fatalf("grow 1 = %d, want 7", got)
	}
	if got := call1(t, mod, "grow", 0); got != 8 {
		t.Fatalf("grow 0 = %d, want 8", got)
	}
}

// TestMemorySizeRefuses checks what the pass refuses and what it leaves
// alone.
func TestMemorySizeRefuses(t *testing.T) {
	// Twice.
	once, err := RewriteWith(memsizeWasm, MemorySizePass)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RewriteWith(once, MemorySizePass); !errors.Is(err, ErrMemorySized) {
		t.Fatalf("a second pass = %v, want ErrMemorySized", err)
	}
	// Two memories: one imported, one defined (the decoder refuses two
	// defined ones itself).
	m, err := Decode(memsizeWasm)
	if err != nil {
		t.Fatal(err)
	}
	m.Imports = append(m.Imports, Import{Module: "env", Name: "mem", Kind: KindMemory, Desc: []byte{0, 1}})
	if err := MemorySize(m); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("two memories: %v, want ErrUnsupported", err)
	}
	// An imported memory is rewritten like a defined one: its minimum is
	// the initial size.
	m = &Module{Imports: []Import{{Module: "env", Name: "mem", Kind: KindMemory, Desc: []byte{1, 3, 9}}}}
	if err := MemorySize(m); err != nil {
		t.Fatalf("an imported memory: %v", err)
	}
	if v, ok := ConstI32(m.Globals[0].Init); !ok || v != 3 {
		t.Fatalf("the global of an imported memory of 3 pages starts at %d", v)
	}
	// No memory: nothing to rewrite, and memory.size without one is
	// malformed.
	m, err = Decode(module(opEnd))
	if err != nil {
		t.Fatal(err)
	}
	m.Memories, m.parts = nil, nil
	m.Types = []FuncType{{}}
	if err := MemorySize(m); err != nil || len(m.Globals) != 0 {
		t.Fatalf("no memory: %v, %d globals added", err, len(m.Globals))
	}
	m.Code[0].Code = []byte{opMemorySize, 0, 0x1a, opEnd}
	if err := MemorySize(m); !errors.Is(err, ErrMalformed) {
		t.Fatalf("memory.size without a memory: %v, want ErrMalformed", err)
	}
}

// TestMemorySizeModulesCurrent rebuilds the pass's test modules from
// their .wat sources and fails when the committed ones differ.
func TestMemorySizeModulesCurrent(t *testing.T) {
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not installed (Debian package wabt)")
	}
	for _, name := range []string{"memsize", "memsize_nomax"} {
		out := filepath.Join(t.TempDir(), name+".wasm")
		if b, err := exec.Command(tool, filepath.Join("testdata", name+".wat"), "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm: %v: %s", err, b)
		}
		want, _ := os.ReadFile(out)
		got, _ := os.ReadFile(filepath.Join("testdata", name+".wasm"))
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s.wasm is not built from its .wat: run go generate", name)
		}
	}
}
