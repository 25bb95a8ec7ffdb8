package quickjs

import (
	"errors"
	"strings"

	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
)

// setEnding records in f how the guest's call of _start ended: callErr is
// what the call returned, killed whether the run's instance was stopped
// by its context (a kill, not the guest's own exit).
func setEnding(f *jsguest.Facts, callErr error, killed bool) {
	var exit *sys.ExitError
	switch {
	case callErr == nil:
		f.Ending = jsguest.EndExit
	case errors.As(callErr, &exit):
		f.Ending, f.ExitCode = jsguest.EndExit, exit.ExitCode()
		if (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) && killed {
			f.Ending = jsguest.EndKilled
		}
	default:
		f.Ending, f.Trap = jsguest.EndTrap, callErr.Error()
		f.StackExhausted = errors.Is(callErr, errStackOverflow) || nativeStackOverflow(callErr)
	}
}

// nativeStackOverflow reports whether err is wazero's trap for an
// exhausted native call stack: its wasmruntime.ErrRuntimeStackOverflow,
// which is internal, so matched by its fixed text. The compiler returns
// it bare ("stack overflow": its call stack grows up to a ceiling of 50
// million bytes, internal/engine/wazevo's callStackCeiling in v1.12.0),
// the interpreter wrapped ("wasm error: stack overflow", past 2,000
// frames).
func nativeStackOverflow(err error) bool {
	s := err.Error()
	return s == "stack overflow" || strings.HasPrefix(s, "stack overflow\n") || strings.HasPrefix(s, "wasm error: stack overflow")
}
