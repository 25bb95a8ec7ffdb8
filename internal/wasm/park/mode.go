package park

import "fmt"

// Mode is how an engine gives every run a fresh guest: parked instances
// restored to their park point, or a new instance per run. The engines
// expose it under their own names (quickjs.Mode, starlarkwasm.Mode),
// with their own words on what each mode costs; the zero value of their
// Options.Mode means the default, ModeParked.
type Mode int

// The modes.
const (
	// ModeParked keeps pools of parked instances, each booted once,
	// snapshotted where the guest first reads its request, and restored
	// to that point before every run.
	ModeParked Mode = iota + 1
	// ModeFresh instantiates the module anew for every run.
	ModeFresh
)

func (m Mode) String() string {
	switch m {
	case ModeParked:
		return "parked"
	case ModeFresh:
		return "fresh"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}
