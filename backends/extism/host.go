package extism

import (
	"context"
	"sync"

	xt "github.com/extism/go-sdk"

	"github.com/sandbank/sandbank/spi"
)

// This file gives a plugin its host functions (SPI 1.1): two imports of
// module "sandbank:host", bound to every compiled plugin, that relay to the
// run's broker (carried in the call's context, so one compiled plugin
// serves every run):
//
//	(import "sandbank:host" "call"  (func (param i64 i64) (result i64)))
//	(import "sandbank:host" "error" (func (result i64)))
//
// call takes the offsets of two Extism kernel blocks (from alloc, filled
// with store_u8/store_u64): the host function's name, and its argument as
// JSON text. It returns the offset of a new block holding the answer as
// JSON text (its size from length), or 0 when the call failed: then error
// returns the offset of a block holding the failure's message (0 before
// any failure). A plugin "catches" a failure by reading the message and
// going on, and leaves it uncaught by setting it as its error (error_set)
// and returning 1, which is a thrown outcome with that message. A run
// without host functions fails every call.

// hostModule is the import module of the host functions.
const hostModule = "sandbank:host"

// hostKey carries a run's hostState in the call's context.
type hostKey struct{}

// hostState is one run's relay.
type hostState struct {
	ctx    context.Context
	broker spi.Host // nil: the run has no host functions

	mu      sync.Mutex
	lastErr string
}

// withHost returns ctx carrying the run's relay to broker.
func withHost(ctx context.Context, broker spi.Host) context.Context {
	return context.WithValue(ctx, hostKey{}, &hostState{ctx: ctx, broker: broker})
}

// msgNoHost is the failure of a call in a run without host functions.
const msgNoHost = "extism: the run has no host functions"

// hostFunctions are the imports bound to every compiled plugin.
func hostFunctions() []xt.HostFunction {
	call := xt.NewHostFunctionWithStack("call", func(ctx context.Context, p *xt.CurrentPlugin, stack []uint64) {
		st, _ := ctx.Value(hostKey{}).(*hostState)
		fail := func(msg string) {
			if st != nil {
				st.mu.Lock()
				st.lastErr = msg
				st.mu.Unlock()
			}
			stack[0] = 0
		}
		if st == nil || st.broker == nil {
			fail(msgNoHost)
			return
		}
		name, err := p.ReadString(stack[0])
		if err != nil {
			fail("extism: host call: the name is not a kernel block")
			return
		}
		args, err := p.ReadBytes(stack[1])
		if err != nil {
			fail("extism: host call: the argument is not a kernel block")
			return
		}
		res, err := st.broker.Call(st.ctx, name, args)
		if err != nil {
			fail(err.Error())
			return
		}
		off, err := p.WriteBytes(res)
		if err != nil || off == 0 {
			fail("extism: host call: the answer does not fit in the plugin's memory")
			return
		}
		stack[0] = off
	}, []xt.ValueType{xt.ValueTypePTR, xt.ValueTypePTR}, []xt.ValueType{xt.ValueTypePTR})
	call.SetNamespace(hostModule)

	lastError := xt.NewHostFunctionWithStack("error", func(ctx context.Context, p *xt.CurrentPlugin, stack []uint64) {
		stack[0] = 0
		st, _ := ctx.Value(hostKey{}).(*hostState)
		if st == nil {
			return
		}
		st.mu.Lock()
		msg := st.lastErr
		st.mu.Unlock()
		if msg == "" {
			return
		}
		if off, err := p.WriteString(msg); err == nil {
			stack[0] = off
		}
	}, nil, []xt.ValueType{xt.ValueTypePTR})
	lastError.SetNamespace(hostModule)
	return []xt.HostFunction{call, lastError}
}
