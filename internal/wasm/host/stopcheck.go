package host

import (
	"context"
	"errors"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// StopGrant is the budget, in the stop check's units (a loop iteration, a
// call, a KiB of bulk memory work), that [StopCheck] grants a guest
// between two of its visits when the call has no [Budget].
const StopGrant = 4096

// ExitCodeBudget is the exit code of a guest that [StopCheck] stopped
// because the call's [Budget] was spent.
const ExitCodeBudget = 0xfe1

// Budget is a CPU budget on the stop check's counter (backends/quickjs's
// fuel), carried by the context of the guest's call ([WithBudget]). It is
// called only by the goroutine that runs the guest.
type Budget interface {
	// Visit accounts for a visit of the guest whose budget stood at left
	// units, and returns the next grant (at most StopGrant), or false
	// when the budget is spent.
	Visit(left int32) (grant int32, ok bool)
}

type budgetKey struct{}

// WithBudget returns ctx carrying b, for StopCheck to find.
func WithBudget(ctx context.Context, b Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// StopCheck is the one host side of the stop check that
// internal/wasm/rewrite's preemption pass puts in a module (the import
// wasmrewrite.PreemptModule.PreemptName, (i32) -> i32: the budget left,
// the next grant). Once the context of the guest's call is done it ends
// the call, as wazero's close-on-context-done would, with a sys.ExitError
// of code sys.ExitCodeContextCanceled, or sys.ExitCodeDeadlineExceeded
// when the context's deadline passed; when the context carries a Budget
// that is spent, with ExitCodeBudget; otherwise it grants the next
// budget. The check stays inside compiled code between visits, and the
// visits keep the goroutine that runs the guest preemptible by the Go
// runtime.
func StopCheck(ctx context.Context, stack []uint64) {
	if err := ctx.Err(); err != nil {
		code := sys.ExitCodeContextCanceled
		if errors.Is(err, context.DeadlineExceeded) {
			code = sys.ExitCodeDeadlineExceeded
		}
		panic(sys.NewExitError(code))
	}
	b, _ := ctx.Value(budgetKey{}).(Budget)
	if b == nil {
		stack[0] = StopGrant
		return
	}
	next, ok := b.Visit(int32(uint32(stack[0])))
	if !ok {
		panic(sys.NewExitError(ExitCodeBudget))
	}
	stack[0] = uint64(uint32(next))
}

// InstantiateStopCheck instantiates, in rt, the host module that a module
// rewritten by wasmrewrite.Rewrite imports its stop check from, with
// StopCheck as its function. A runtime with it needs no
// WithCloseOnContextDone. (A module that imports more from the same host
// module, backends/quickjs's stack check, exports StopCheck from a
// builder of its own.)
func InstantiateStopCheck(ctx context.Context, rt wazero.Runtime) error {
	_, err := ExportStopCheck(rt.NewHostModuleBuilder(wasmrewrite.PreemptModule)).Instantiate(ctx)
	return err
}

// ExportStopCheck adds StopCheck to the host module builder h (which must
// be wasmrewrite.PreemptModule's) under wasmrewrite.PreemptName.
func ExportStopCheck(h wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	i32 := []api.ValueType{api.ValueTypeI32}
	return h.NewFunctionBuilder().
		WithGoFunction(api.GoFunc(StopCheck), i32, i32).
		Export(wasmrewrite.PreemptName)
}
