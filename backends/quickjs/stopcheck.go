package quickjs

import (
	"context"
	"fmt"
	"sync"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/internal/wasmrewrite"
)

// The stop check. The module this backend compiles is QuickJS rewritten
// by internal/wasmrewrite's preemption pass: every loop header and
// function entry takes a unit off a budget inside compiled code, and the
// guest calls preempt below when the budget is spent. preempt stops the
// run (a trap, seen as a kill) when the call's context is done, and
// otherwise grants the next budget. So a run is stopped within
// preemptGrant units of its context ending, and the goroutine that runs
// the guest returns to Go at least that often, which keeps it preemptible
// by the Go runtime, without wazero's close-on-context-done (whose check
// leaves compiled code for Go at every loop header).

// preemptGrant is the budget, in units (a loop iteration, a call, a KiB of
// bulk memory work), between two visits of the guest to the host.
const preemptGrant = 4096

// rewrittenQuickJS is the QuickJS binary with the stop check, rewritten
// once per process. wazero's compilation cache keys on the module's
// bytes, so the rewritten module has its compiled form cached apart from
// the original's.
var rewrittenQuickJS = sync.OnceValues(func() ([]byte, error) {
	return wasmrewrite.RewriteWith(quickjswasi.QuickJSWASM, guestPasses...)
})

// guestPasses are the passes of the rewritten module, in the order of
// TEAM.md: the memory-size pass (growth.go) before the preemption pass,
// so that the preemption pass instruments the memory-size pass's helper
// too.
var guestPasses = []wasmrewrite.Pass{wasmrewrite.MemorySizePass, wasmrewrite.PreemptPass}

// uncheckedQuickJS is the module of Options.StopCheck off: rewritten by
// every pass but the preemption pass, so that turning the check off
// measures the check alone (parked instances still survive memory
// growth).
var uncheckedQuickJS = sync.OnceValues(func() ([]byte, error) {
	var passes []wasmrewrite.Pass
	for _, p := range guestPasses {
		if p.Name != wasmrewrite.PreemptPass.Name {
			passes = append(passes, p)
		}
	}
	return wasmrewrite.RewriteWith(quickjswasi.QuickJSWASM, passes...)
})

// guestModule returns the bytes the backend compiles: QuickJS rewritten,
// without the stop check when it is off, and as shipped for wazero's
// close-on-context-done (NewWazeroClose: the configuration before the
// rewriting, kept for benchmarks and the differential test of the
// rewrite).
func guestModule(set settings) ([]byte, error) {
	if set.wazeroClose {
		return quickjswasi.QuickJSWASM, nil
	}
	rewrite := rewrittenQuickJS
	if !set.stopCheck {
		rewrite = uncheckedQuickJS
	}
	wasm, err := rewrite()
	if err != nil {
		return nil, fmt.Errorf("quickjs: rewriting the module: %w", err)
	}
	return wasm, nil
}

// instantiateStopCheck instantiates the host module the rewritten module
// imports its stop check from.
func instantiateStopCheck(ctx context.Context, rt wazero.Runtime) error {
	i32 := []api.ValueType{api.ValueTypeI32}
	_, err := rt.NewHostModuleBuilder(wasmrewrite.PreemptModule).
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(preempt), i32, i32).
		Export(wasmrewrite.PreemptName).
		Instantiate(ctx)
	return err
}

// preempt is the guest's visit: ctx is the context of the guest's call
// (the run's, or its parked instance's).
func preempt(ctx context.Context, stack []uint64) {
	if ctx.Err() != nil {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded)) // a kill: see setEnding
	}
	m := meterOf(ctx)
	if m == nil {
		stack[0] = preemptGrant
		return
	}
	next, ok := m.visit(int32(uint32(stack[0])))
	if !ok {
		panic(sys.NewExitError(exitCodeFuel)) // read through the run's cpuExhausted
	}
	stack[0] = uint64(uint32(next))
}

// exitCodeFuel is the exit code of a guest stopped because its fuel ran
// out; the run tells it from the guest's own exits by its cpuExhausted.
const exitCodeFuel = 0xfe1
