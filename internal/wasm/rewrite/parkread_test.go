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
	"github.com/tetratelabs/wazero/experimental"
)

//go:generate wat2wasm testdata/park.wat -o testdata/park.wasm
//go:embed testdata/park.wasm
var parkWasm []byte

// parkHost is a test host for park.wasm: its fd_read and env.done.
type parkHost struct {
	reads  [][4]uint64 // the arguments of every fd_read
	answer func(ctx context.Context) uint32
	done   func(ctx context.Context)
}

// instantiatePark runs park.wasm, rewritten by passes, with h as its host.
func instantiatePark(t *testing.T, h *parkHost, passes ...Pass) api.Module {
	t.Helper()
	wasm, err := RewriteWith(parkWasm, passes...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	t.Cleanup(func() { rt.Close(ctx) })
	i32 := api.ValueTypeI32
	if _, err := rt.NewHostModuleBuilder(ParkReadModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
			h.reads = append(h.reads, [4]uint64(stack[:4]))
			stack[0] = uint64(h.answer(ctx))
		}), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export(ParkReadName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, _ []uint64) {
			if h.done != nil {
				h.done(ctx)
			}
		}), nil, nil).Export("done").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestParkReadRetries: every call of fd_read, direct or through the
// table, is repeated with the same arguments while the host answers
// ParkRetry; without the pass, ParkRetry reaches the guest.
func TestParkReadRetries(t *testing.T) {
	for _, fn := range []string{"read", "read_indirect"} {
		t.Run(fn, func(t *testing.T) {
			h := &parkHost{}
			h.answer = func(context.Context) uint32 {
				if len(h.reads) <= 2 {
					return ParkRetry
				}
				return 7
			}
			mod := instantiatePark(t, h, ParkReadPass)
			got, err := mod.ExportedFunction(fn).Call(context.Background(), 3)
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != 7 || len(h.reads) != 3 {
				t.Fatalf("%s = %d after %d reads, want 7 after 3", fn, got[0], len(h.reads))
			}
			for _, args := range h.reads {
				if args != [4]uint64{3, 16, 1, 32} {
					t.Fatalf("the reads had arguments %v, want (3, 16, 1, 32) each time", h.reads)
				}
			}

			// The control: as shipped, the guest sees ParkRetry.
			h = &parkHost{answer: func(context.Context) uint32 { return ParkRetry }}
			mod = instantiatePark(t, h)
			got, err = mod.ExportedFunction(fn).Call(context.Background(), 3)
			if err != nil || uint32(got[0]) != ParkRetry || len(h.reads) != 1 {
				t.Fatalf("without the pass: %v, %v after %d reads", got, err, len(h.reads))
			}
		})
	}
}

// TestParkReadSnapshotPerRestore parks park.wasm inside fd_read and
// resumes it there again and again, as the QuickJS backend's parked mode
// does: each snapshot is restored once, with ParkRetry, and the read the
// wrapper repeats takes the next one. Every round starts from the state
// of the park point (the globals are put back through their exports) and
// reads with the same arguments.
func TestParkReadSnapshotPerRestore(t *testing.T) {
	const rounds = 6
	var (
		snap     experimental.Snapshot
		resnap   bool
		snaps    int
		restored = map[experimental.Snapshot]bool{}
		counts   []uint64
		saved    []uint64
		globals  []api.MutableGlobal
	)
	h := &parkHost{}
	mod := instantiatePark(t, h, ParkReadPass, ExportGlobalsPass)
	for k := 0; ; k++ {
		g, ok := mod.ExportedGlobal(GlobalExportName(k)).(api.MutableGlobal)
		if !ok {
			break
		}
		globals = append(globals, g)
	}
	if len(globals) != 2 {
		t.Fatalf("%d mutable globals exported, want 2", len(globals))
	}
	h.answer = func(ctx context.Context) uint32 {
		if snap == nil || resnap { // the park point, or the read repeated after a restore
			snap, resnap = experimental.GetSnapshotter(ctx).Snapshot(), false
			snaps++
			if saved == nil {
				for _, g := range globals {
					saved = append(saved, g.Get())
				}
			}
		}
		return 0
	}
	h.done = func(context.Context) {
		counts = append(counts, globals[0].Get())
		if len(counts) == rounds {
			return
		}
		for i, g := range globals {
			g.Set(saved[i])
		}
		if restored[snap] {
			t.Error("a snapshot was restored twice")
		}
		restored[snap] = true
		resnap = true
		snap.Restore([]uint64{uint64(ParkRetry)})
	}
	got, err := mod.ExportedFunction("serve").Call(experimental.WithSnapshotter(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 6 || len(counts) != rounds || snaps != rounds {
		t.Fatalf("serve = %d after %d rounds and %d snapshots, want 6 after %d and %d", got[0], len(counts), snaps, rounds, rounds)
	}
	for i, c := range counts {
		if c != 6 {
			t.Errorf("round %d saw count %d, want 6 (5 at the park point, plus its own bump)", i, c)
		}
	}
	// One read at the park point, then one per restore: the read the
	// wrapper repeats (Restore answers the restored one).
	if len(h.reads) != 1+(rounds-1) {
		t.Errorf("%d host reads, want %d", len(h.reads), 1+(rounds-1))
	}
	for _, args := range h.reads {
		if args != [4]uint64{0, 16, 1, 32} {
			t.Fatalf("the reads had arguments %v, want (0, 16, 1, 32) each time", h.reads)
		}
	}
}

// TestTestdataMatchesSources rebuilds the test modules from their .wat
// with wat2wasm and fails when a committed module differs.
func TestTestdataMatchesSources(t *testing.T) {
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not installed (Debian package wabt)")
	}
	for _, name := range []string{"park", "guest"} {
		out := filepath.Join(t.TempDir(), name+".wasm")
		msg, err := exec.Command(tool, filepath.Join("testdata", name+".wat"), "-o", out).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", name, err, msg)
		}
		built, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(built, committed) {
			t.Errorf("testdata/%s.wasm differs from its .wat; run go generate ./internal/wasm/rewrite/", name)
		}
	}
}

// FuzzParkedPasses: whatever the bytes, the pass list of a parked host
// returns a module that decodes, or an error of a known kind (the
// decoder's, or one of the passes' refusals), never a panic.
func FuzzParkedPasses(f *testing.F) {
	f.Add(parkWasm)
	f.Add(guestWasm)
	f.Add(module(opI32Const, 0, 0xd0, 0x70, opTableSet, 0, opEnd))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := RewriteWith(wasm, ParkReadPass, PreemptPass, ExportGlobalsPass, StaticTablesPass)
		if err != nil {
			for _, known := range []error{ErrMalformed, ErrUnsupported, ErrTableWritten, errParkReadType, errGlobalsExported, errRewritten} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("an error of no known kind: %v", err)
		}
		if _, err := Decode(out); err != nil {
			t.Fatalf("a rewritten module does not decode: %v", err)
		}
	})
}
