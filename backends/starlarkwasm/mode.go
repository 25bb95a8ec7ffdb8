package starlarkwasm

import "github.com/sandbank/sandbank/internal/wasm/park"

// Mode is how the backend gives every run a fresh interpreter (the
// values of internal/wasm/park's, as quickjs.Mode's are). The zero value
// of Options.Mode means the default, ModeParked.
type Mode int

// String names the mode ("parked", "fresh").
func (m Mode) String() string { return park.Mode(m).String() }

// The modes.
const (
	// ModeParked keeps pools of parked instances: each boots the guest's
	// Go runtime once, is snapshotted where the guest first reads its
	// request, and is restored to that point before every run (park.go).
	ModeParked = Mode(park.ModeParked)
	// ModeFresh instantiates the module anew for every run, which boots
	// the Go runtime every time (tens of milliseconds).
	ModeFresh = Mode(park.ModeFresh)
)
