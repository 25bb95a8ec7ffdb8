package rewrite

import (
	"context"
	_ "embed"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

//go:generate wat2wasm testdata/guest.wat -o testdata/guest.wasm
//go:embed testdata/guest.wasm
var guestWasm []byte

var errStopped = errors.New("stopped")

// host is a test host for the preemption pass's import.
type host struct {
	grant  int32
	visits atomic.Int64
	units  atomic.Int64 // units charged, as the visits report them
	stop   atomic.Bool
	last   int32
}

func (h *host) preempt(_ context.Context, stack []uint64) {
	budget := int32(stack[0])
	h.visits.Add(1)
	h.units.Add(int64(h.last - budget))
	if h.stop.Load() {
		panic(errStopped)
	}
	h.last = h.grant
	stack[0] = uint64(uint32(h.grant))
}

// instantiate runs wasm (rewritten when preempt) in a new runtime with h
// as its host.
func instantiate(t *testing.T, wasm []byte, h *host, rewrite bool) api.Module {
	t.Helper()
	if rewrite {
		m, err := Decode(wasm)
		if err != nil {
			t.Fatal(err)
		}
		if err := Preempt(m); err != nil {
			t.Fatal(err)
		}
		wasm = m.Encode()
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	t.Cleanup(func() { rt.Close(ctx) })
	i32 := []api.ValueType{api.ValueTypeI32}
	if _, err := rt.NewHostModuleBuilder(PreemptModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(h.preempt), i32, i32).Export(PreemptName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), nil, nil).Export("tick").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func call(t *testing.T, mod api.Module, name string, args ...uint64) ([]uint64, error) {
	t.Helper()
	return mod.ExportedFunction(name).Call(context.Background(), args...)
}

// TestPreemptCountsUnits checks the unit of work: a loop iteration or a
// function entry is one unit, and the host is visited every grant units.
func TestPreemptCountsUnits(t *testing.T) {
	h := &host{grant: 100}
	mod := instantiate(t, guestWasm, h, true)
	out, err := call(t, mod, "count", 100_000)
	if err != nil || out[0] != 100_000 {
		t.Fatalf("count = %v, %v", out, err)
	}
	// 100,001 loop headers and 1 entry; the first visit is at entry
	// (the budget starts at 0).
	if v := h.visits.Load(); v < 1000 || v > 1002 {
		t.Errorf("%d visits for 100,002 units at a grant of 100, want about 1,001", v)
	}
	if out, err := call(t, mod, "recurse", 1000); err != nil || out[0] != 1000 {
		t.Fatalf("recurse = %v, %v", out, err)
	}
	if out, err := call(t, mod, "indirect", 7); err != nil || out[0] != 7 {
		t.Fatalf("indirect = %v, %v (the table's function indices must follow the shift)", out, err)
	}
	if _, err := call(t, mod, "ticks"); err != nil {
		t.Fatal(err)
	}
}

// TestPreemptStopsLoops checks that a loop without calls and a loop of
// bulk operations over all of memory both visit the host, which can stop
// them.
func TestPreemptStopsLoops(t *testing.T) {
	for _, name := range []string{"spin", "fill_forever"} {
		t.Run(name, func(t *testing.T) {
			h := &host{grant: 1024}
			mod := instantiate(t, guestWasm, h, true)
			timer := time.AfterFunc(50*time.Millisecond, func() { h.stop.Store(true) })
			defer timer.Stop()
			done := make(chan error, 1)
			go func() { _, err := call(t, mod, name); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, errStopped) {
					t.Fatalf("%s ended with %v, want the host's stop", name, err)
				}
			case <-time.After(30 * time.Second): // wide margin: the stop comes after 50 ms
				t.Fatalf("%s was not stopped within 30 s of the host's stop", name)
			}
		})
	}
}

// TestPreemptKeepsGCResponsive is the guarantee the pass exists for: a
// tight loop in compiled wasm code does not hold up a garbage collection
// that another goroutine asks for. Without the pass, runtime.GC() waits
// until the loop ends (the goroutine in wasm code cannot be preempted),
// and the loop here runs for about ten seconds unrewritten. The test
// times nothing: five collections must complete while the loop is still
// running (it runs until the host stops it), which a loop that held up
// the collector could not allow whatever the machine's load.
func TestPreemptKeepsGCResponsive(t *testing.T) {
	h := &host{grant: 1024}
	mod := instantiate(t, guestWasm, h, true)
	done := make(chan error, 1)
	go func() {
		_, err := call(t, mod, "count", 0xffffffff) // seconds of looping
		done <- err
	}()
	for h.visits.Load() < 2 { // the entry's visit, then the loop's first
		select {
		case err := <-done:
			t.Fatalf("the loop ended with %v before it visited the host", err)
		default:
			runtime.Gosched()
		}
	}
	for range 5 {
		runtime.GC()
	}
	select {
	case err := <-done:
		t.Fatalf("the loop ended (%v) before five collections completed: runtime.GC() waited for it", err)
	default:
	}
	h.stop.Store(true)
	if err := <-done; !errors.Is(err, errStopped) {
		t.Fatalf("the loop ended with %v, want the host's stop", err)
	}
}

// TestPreemptBulkSameResults runs memory.fill and memory.copy, with
// sizes around BulkChunk, overlapping both ways and out of bounds, on the
// original and the rewritten module and requires the same memory and the
// same traps.
func TestPreemptBulkSameResults(t *testing.T) {
	orig := instantiate(t, guestWasm, &host{grant: 1}, false)
	h := &host{grant: 16}
	rewritten := instantiate(t, guestWasm, h, true)
	size := uint64(orig.Memory().Size())
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []uint64{0, 1, 1000, BulkChunk - 1, BulkChunk, BulkChunk + 1, 2*BulkChunk + 17, size / 2, size - 5, size, size + 1}
	for i := 0; i < 200; i++ {
		n := sizes[rng.IntN(len(sizes))]
		d := rng.Uint64N(size + 2)
		s := rng.Uint64N(size + 2)
		if rng.IntN(3) == 0 { // overlapping ranges
			s = min(d+uint64(rng.IntN(3000))-1500, size)
		}
		name := "copy"
		if i%2 == 0 {
			name, s = "fill", uint64(rng.IntN(256))
		}
		_, errA := call(t, orig, name, d, s, n)
		_, errB := call(t, rewritten, name, d, s, n)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s(%d, %d, %d): original %v, rewritten %v", name, d, s, n, errA, errB)
		}
		a, _ := call(t, orig, "checksum", size)
		b, _ := call(t, rewritten, "checksum", size)
		if a[0] != b[0] {
			t.Fatalf("%s(%d, %d, %d): memory differs afterwards", name, d, s, n)
		}
		if name == "fill" && rng.IntN(8) == 0 { // new values to copy
			call(t, orig, "fill", 0, uint64(i), size/3)
			call(t, rewritten, "fill", 0, uint64(i), size/3)
		}
	}
	if h.units.Load() < int64(size>>10) {
		t.Errorf("only %d units charged for the bulk operations", h.units.Load())
	}
}
