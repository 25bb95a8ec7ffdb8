package quickjs

import (
	"errors"
	"strings"

	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/backends/quickjs/internal/guest"
)

// setEnding records in f how the guest's call of _start ended: callErr is
// what the call returned, killed whether the run's instance was stopped
// by its context (a kill, not the guest's own exit).
func setEnding(f *guest.Facts, callErr error, killed bool) {
	var exit *sys.ExitError
	switch {
	case callErr == nil:
		f.Ending = guest.EndExit
	case errors.As(callErr, &exit):
		f.Ending, f.ExitCode = guest.EndExit, exit.ExitCode()
		if (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) && killed {
			f.Ending = guest.EndKilled
		}
	default:
		f.Ending, f.Trap = guest.EndTrap, callErr.Error()
		f.StackExhausted = nativeStackOverflow(callErr)
	}
}

// nativeStackOverflow reports whether err is wazero's trap for an
// exhausted native call stack (its wasmruntime.ErrRuntimeStackOverflow,
// which is internal: matched by its fixed text).
func nativeStackOverflow(err error) bool {
	return strings.HasPrefix(err.Error(), "wasm error: stack overflow")
}
