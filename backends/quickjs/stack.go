package quickjs

import (
	"context"
	"errors"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// The C stack's bound. The module this backend compiles has a C stack of
// Options.StackBytes of its own (internal/wasm/rewrite's stack pass): after
// every move of its stack pointer the guest checks it against the
// stack's bottom, and calls stackOverflow below when a frame would cross
// it, before the frame writes anything. The run then ends in the thrown
// RangeError "Maximum call stack size exceeded" (jsguest.Interpret, from
// Facts.StackExhausted), and its instance is discarded (it ended in a
// trap). wazero's own limit on the native call stack (the compiler's
// call stack grows up to a ceiling of 50 million bytes, then traps with
// "stack overflow") is read the same way; with the default stack the C
// stack runs out long before it.

// errStackOverflow is the trap of a guest whose C stack ran out.
var errStackOverflow = errors.New("quickjs: the C stack is exhausted")

// stackOverflow is the guest's call when its stack pointer would leave
// the stack: it traps, with errStackOverflow.
func stackOverflow(context.Context, []uint64) {
	panic(errStackOverflow)
}

// restoreParkBytes puts linear memory below the park point's size (buf)
// back to the park point (growth.go's restoreMemory zeroes what lies
// above), except the part of the C stack that no run
// since the park point reached: everything below the stack region, the
// canary at its bottom, and the region from the stack pass's low-water
// mark (less the red zone leaf functions use below the stack pointer) to
// its top. The stack below the mark is dead (no frame was ever there since
// the last restore; a run writes no byte below the mark less the red
// zone), so it still holds the park point's bytes: the restore is as
// complete as a full copy, without copying the 1 MiB stack every run. The
// caller restores the mark with the other globals. Without the mark (it
// is not exported, or out of the region) it copies everything.
func (inst *instance) restoreParkBytes(buf []byte) {
	bottom, top := inst.b.layout.Bottom, inst.b.layout.Top
	var low uint32
	if g := inst.mod.ExportedGlobal(wasmrewrite.StackLowName); g != nil {
		low = uint32(g.Get())
	}
	if low < bottom+jsguest.CanarySize+wasmrewrite.StackRedZone || low > top || int(top) > len(buf) || len(buf) != len(inst.memory) {
		copy(buf, inst.memory)
		return
	}
	canaryEnd := bottom + jsguest.CanarySize
	dirty := low - wasmrewrite.StackRedZone
	copy(buf[:canaryEnd], inst.memory[:canaryEnd])
	copy(buf[dirty:], inst.memory[dirty:])
}
