package host

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// StopGrant is the budget, in the stop check's units (a loop iteration, a
// call, a KiB of bulk memory work), that [InstantiateStopCheck]'s host
// function grants a guest between two of its visits.
const StopGrant = 4096

// InstantiateStopCheck instantiates, in rt, the host module that a module
// rewritten by wasmrewrite.Rewrite imports its stop check from. The
// guest's visit ends the call, as wazero's close-on-context-done would,
// with a sys.ExitError of code sys.ExitCodeDeadlineExceeded once the
// context of the guest's call is done, and otherwise grants StopGrant more
// units. A runtime with it needs no WithCloseOnContextDone: the check
// stays inside compiled code between visits, and the visits keep the
// goroutine that runs the guest preemptible by the Go runtime.
//
// An engine with a CPU budget on the same counter (backends/quickjs's
// fuel) brings its own host function instead.
func InstantiateStopCheck(ctx context.Context, rt wazero.Runtime) error {
	i32 := []api.ValueType{api.ValueTypeI32}
	_, err := rt.NewHostModuleBuilder(wasmrewrite.PreemptModule).
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(stopCheck), i32, i32).
		Export(wasmrewrite.PreemptName).
		Instantiate(ctx)
	return err
}

func stopCheck(ctx context.Context, stack []uint64) {
	if ctx.Err() != nil {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
	stack[0] = StopGrant
}
