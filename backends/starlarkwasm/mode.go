package starlarkwasm

import "fmt"

// Mode is how the backend gives every run a fresh interpreter. The zero
// value of Options.Mode means the default, ModeParked.
type Mode int

const (
	// ModeParked keeps pools of parked instances: each boots the guest's
	// Go runtime once, is snapshotted where the guest first reads its
	// request, and is restored to that point before every run (park.go).
	ModeParked Mode = iota + 1
	// ModeFresh instantiates the module anew for every run, which boots
	// the Go runtime every time (tens of milliseconds).
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
