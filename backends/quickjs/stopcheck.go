package quickjs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/wasm/cache"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// The stop check. The module this backend compiles is QuickJS rewritten
// by internal/wasm/rewrite's preemption pass: every loop header and
// function entry takes a unit off a budget inside compiled code, and the
// guest calls the stop check (internal/wasm/host's StopCheck) when the
// budget is spent. It stops the run (an exit, seen as a kill) when the
// call's context is done, and otherwise grants the next budget (the fuel
// meter's, fuel.go). So a run is stopped within wasmhost.StopGrant units
// of its context ending, and the goroutine that runs the guest returns to
// Go at least that often, which keeps it preemptible by the Go runtime,
// without wazero's close-on-context-done (whose check leaves compiled
// code for Go at every loop header).

// quickJSWASM is the binary the backend rewrites: the one
// go-quickjs-wasi ships (tests replace it).
var quickJSWASM = quickjswasi.QuickJSWASM

// guestPasses is the pass list of the module a backend with set compiles,
// in the order every pass must keep: stack (first: it grows the initial
// memory the memory-size pass reads), memory size, park-read, preempt,
// export-globals (last of the passes that add code or globals, so that it
// exports every mutable global), then the static-tables proof, which
// checks the module as it will run. The stack pass applies always: no
// backend runs without its stack guard. The memory-size pass (growth.go)
// applies with the stop check off too, so that turning the check off
// measures the check alone; parked mode's passes (park.go) apply in
// ModeParked only. wazero's close-on-context-done (NewWazeroClose, the
// configuration before the rewriting, kept for benchmarks and the
// differential test of the rewrite) gets the stack pass and parked mode's
// passes only.
func guestPasses(set settings) []wasmrewrite.Pass {
	parked := set.mode == ModeParked
	passes := []wasmrewrite.Pass{jsguest.StackPass(set.stackBytes).Pass()}
	if !set.wazeroClose {
		passes = append(passes, wasmrewrite.MemorySizePass)
	}
	if parked {
		passes = append(passes, wasmrewrite.ParkReadPass)
	}
	if set.stopCheck {
		passes = append(passes, wasmrewrite.PreemptPass)
	}
	if parked {
		passes = append(passes, wasmrewrite.ExportGlobalsPass, wasmrewrite.StaticTablesPass)
	}
	return passes
}

// guestBinary is the module the backend compiles, and where its C stack
// lies.
type guestBinary struct {
	wasm   []byte
	layout jsguest.Layout
	// key names the module in the cache (cache.Key); its compiled form is
	// kept under the same name.
	key string
}

// rewriteKey names one rewritten module in the process: its input, its
// pass list and the cache directory it is kept in ("" for none).
type rewriteKey struct {
	input   *byte
	version string
	dir     string
}

// guestModules holds the rewritten QuickJS binaries of the process, by
// rewriteKey, each rewritten (or read from the cache directory) once (a
// func() (guestBinary, error) from sync.OnceValues). wazero's compilation
// cache keys on the module's bytes, so every rewritten module has its
// compiled form cached apart.
var guestModules sync.Map

// errStackGuard marks a module whose C stack cannot be guarded: no
// backend runs it, in any mode.
var errStackGuard = errors.New("quickjs: the C stack cannot be guarded")

// layoutFormat names the encoding of a rewritten module in the cache
// (encodeGuest); it is part of the entry's key.
const layoutFormat = "quickjs-guest-1"

// guestKey names the rewritten module of set's mode in the cache
// directory (and so its compiled forms): the input's hash, the pass list
// and the encoding.
func guestKey(set settings) string {
	input := cache.EmbeddedInput(quickJSWASM, quickjswasi.QuickJSWASM, "github.com/paralin/go-quickjs-wasi")
	return cache.Key("quickjs", input, wasmrewrite.Version(guestPasses(set)...), layoutFormat)
}

// guestModule returns the bytes the backend compiles (QuickJS rewritten
// by guestPasses) and their stack layout. With a cache directory, a
// rewritten module another process left there is read instead of
// rewriting; the cache's key names the input's hash and the pass list.
func guestModule(set settings, dir string) (guestBinary, error) {
	passes := guestPasses(set)
	input := quickJSWASM
	version := wasmrewrite.Version(passes...)
	key := rewriteKey{input: &input[0], version: version, dir: dir}
	rewrite, _ := guestModules.LoadOrStore(key, sync.OnceValues(func() (guestBinary, error) {
		name := guestKey(set)
		b, err := cache.Memo(dir, name+".wasm", func() ([]byte, error) {
			layout, err := jsguest.GuardedLayout(input, set.stackBytes)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", errStackGuard, err)
			}
			wasm, err := wasmrewrite.RewriteWith(input, passes...)
			if err != nil {
				return nil, fmt.Errorf("quickjs: rewriting the module: %w", err)
			}
			return encodeGuest(guestBinary{wasm: wasm, layout: layout}), nil
		})
		if err != nil {
			return guestBinary{}, err
		}
		g, ok := decodeGuest(b)
		if !ok {
			// Sealed but not ours (another format under the same key):
			// rewrite without the cache.
			return guestModule(set, "")
		}
		g.key = name
		return g, nil
	}))
	return rewrite.(func() (guestBinary, error))()
}

// encodeGuest is a rewritten module as the cache keeps it: the layout's
// Bottom and Top (little-endian uint32s), then the module.
func encodeGuest(g guestBinary) []byte {
	b := make([]byte, 8, 8+len(g.wasm))
	binary.LittleEndian.PutUint32(b, g.layout.Bottom)
	binary.LittleEndian.PutUint32(b[4:], g.layout.Top)
	return append(b, g.wasm...)
}

// decodeGuest reads what encodeGuest wrote.
func decodeGuest(b []byte) (guestBinary, bool) {
	if len(b) <= 8 {
		return guestBinary{}, false
	}
	l := jsguest.Layout{Bottom: binary.LittleEndian.Uint32(b), Top: binary.LittleEndian.Uint32(b[4:])}
	if l.Bottom >= l.Top {
		return guestBinary{}, false
	}
	return guestBinary{wasm: b[8:], layout: l}, true
}

// instantiateHost instantiates the host module the rewritten module
// imports its stack check and stop check from; the stop check is
// internal/wasm/host's, with the run's fuel meter as its budget.
func instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	_, err := wasmhost.ExportStopCheck(rt.NewHostModuleBuilder(wasmrewrite.PreemptModule)).
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(stackOverflow), nil, nil).
		Export(wasmrewrite.StackOverflowName).
		Instantiate(ctx)
	return err
}
