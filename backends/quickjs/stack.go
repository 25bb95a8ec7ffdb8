package quickjs

import (
	"context"
	"errors"
)

// The C stack's bound. The module this backend compiles has a C stack of
// Options.StackBytes of its own (internal/wasmrewrite's stack pass): after
// every move of its stack pointer the guest checks it against the
// stack's bottom, and calls stackOverflow below when a frame would cross
// it, before the frame writes anything. The run then ends in the thrown
// RangeError "Maximum call stack size exceeded" (guest.Interpret, from
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
