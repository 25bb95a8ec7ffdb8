package extism

import (
	"context"

	xt "github.com/extism/go-sdk"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// The stop check. Every plugin is rewritten by internal/wasm/rewrite's
// preemption pass before it is compiled: its loop headers and calls take
// units off a budget inside compiled code, bulk memory operations a unit
// per KiB (in chunks), and the plugin calls preempt below when the budget
// is spent: the stop check of every wasm engine (internal/wasm/host's
// StopCheck), which stops the call (as the SDK's timeout would: exit code
// DeadlineExceeded, or ContextCanceled for a cancellation) when the call's
// context is done, and otherwise grants the next budget. So a plugin is stopped at its wall clock without
// wazero's close-on-context-done (which left compiled code for Go at every
// loop header), and the goroutine running it returns to Go often enough
// to stay preemptible by the Go runtime.

// preemptFunction is the host function the rewritten plugins import.
func preemptFunction() xt.HostFunction {
	f := xt.NewHostFunctionWithStack(wasmrewrite.PreemptName, preempt,
		[]xt.ValueType{xt.ValueTypeI32}, []xt.ValueType{xt.ValueTypeI32})
	f.SetNamespace(wasmrewrite.PreemptModule)
	return f
}

func preempt(ctx context.Context, _ *xt.CurrentPlugin, stack []uint64) {
	wasmhost.StopCheck(ctx, stack)
}

// startCtx is the context a plugin is instantiated in. Its start function
// runs rewritten too, and the SDK's host functions (ours included) find
// their plugin in the context: the SDK puts it there for a call, not for
// instantiating. preempt does not use it, so a typed nil serves.
func startCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, xt.PluginCtxKey("plugin"), (*xt.Plugin)(nil))
}
