package spi

import (
	"errors"
	"fmt"
)

// Network says what a script can reach. The zero value is invalid.
type Network int

// The network declarations.
const (
	// NetworkNone: the script can reach nothing outside the sandbox.
	NetworkNone Network = iota + 1
	// NetworkAllowlist: the script can reach configured hosts only.
	NetworkAllowlist
	// NetworkOpen: the script may reach anything.
	NetworkOpen
)

var networkNames = [...]string{NetworkNone: "none", NetworkAllowlist: "allowlist", NetworkOpen: "open"}

// Valid reports whether n is one of the defined values.
func (n Network) Valid() bool { return n >= NetworkNone && n <= NetworkOpen }

// String returns "none", "allowlist" or "open", or "Network(N)".
func (n Network) String() string {
	if !n.Valid() {
		return fmt.Sprintf("Network(%d)", int(n))
	}
	return networkNames[n]
}

// MarshalText implements encoding.TextMarshaler.
func (n Network) MarshalText() ([]byte, error) {
	if !n.Valid() {
		return nil, fmt.Errorf("spi: invalid network value %d", int(n))
	}
	return []byte(n.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (n *Network) UnmarshalText(b []byte) error {
	for v := NetworkNone; v <= NetworkOpen; v++ {
		if string(b) == networkNames[v] {
			*n = v
			return nil
		}
	}
	return fmt.Errorf("spi: unknown network value %q", b)
}

// WallClock says how the wall-clock limit is enforced. The zero value is
// invalid.
type WallClock int

// The wall-clock declarations.
const (
	// WallClockHard: the run is preempted at the deadline, even inside one
	// long native operation, and Evaluate returns promptly.
	WallClockHard WallClock = iota + 1
	// WallClockSoft: the engine is asked to stop, but some operations run
	// to completion first; the effect still returns at its own deadline.
	WallClockSoft
)

var wallClockNames = [...]string{WallClockHard: "hard", WallClockSoft: "soft"}

// Valid reports whether w is one of the defined values.
func (w WallClock) Valid() bool { return w >= WallClockHard && w <= WallClockSoft }

// String returns "hard" or "soft", or "WallClock(N)".
func (w WallClock) String() string {
	if !w.Valid() {
		return fmt.Sprintf("WallClock(%d)", int(w))
	}
	return wallClockNames[w]
}

// MarshalText implements encoding.TextMarshaler.
func (w WallClock) MarshalText() ([]byte, error) {
	if !w.Valid() {
		return nil, fmt.Errorf("spi: invalid wall clock value %d", int(w))
	}
	return []byte(w.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (w *WallClock) UnmarshalText(b []byte) error {
	for v := WallClockHard; v <= WallClockSoft; v++ {
		if string(b) == wallClockNames[v] {
			*w = v
			return nil
		}
	}
	return fmt.Errorf("spi: unknown wall clock value %q", b)
}

// Capabilities is a backend's honest declaration of what it enforces. The
// conformance kit checks each declaration against behaviour.
type Capabilities struct {
	// Language is the script language, such as "javascript", "starlark" or
	// "wasm". It selects the conformance fixture set.
	Language string `json:"language"`
	// Network is what a script can reach.
	Network Network `json:"network"`
	// WallClock is how the wall clock is enforced.
	WallClock WallClock `json:"wallClock"`
	// Memory is true when Limits.MemoryBytes is enforced.
	Memory bool `json:"memory"`
	// CPU is true when a CPU budget is enforced.
	CPU bool `json:"cpu"`
	// FreshPerRun is true when no state survives from one run to the next.
	FreshPerRun bool `json:"freshPerRun"`
	// HostCalls is true when the backend lets a script call host functions
	// through [Request].Host (SPI 1.1). The effect refuses a call that has
	// host functions on a backend that does not declare it.
	HostCalls bool `json:"hostCalls,omitempty"`
	// Logs is true when every line the script logs (console.log and its
	// kin, print, a module's stdout and stderr) reaches Request.Logs, in
	// order, with its level and stream (SPI 1.1.0).
	Logs bool `json:"logs,omitempty"`
	// Deterministic is true when a run's host calls and value depend only
	// on the script, its input and its host calls' answers (SPI 1.4.0):
	// the script sees a fake clock and seeded randomness, never the
	// machine's. Only such an engine's runs may suspend at a host call
	// and resume later by replay (docs/design.md, "Durable runs"); the
	// effect refuses a durable call on any other.
	Deterministic bool `json:"deterministic,omitempty"`
	// Files is true when the backend gives the script the request's
	// input files and returns the files it writes (SPI 1.5.0), each in its
	// language's idiom (docs/design.md, "Files"), bounded by
	// Limits.MaxOutFiles and MaxOutFileBytes. The effect refuses a call
	// with input files on any other backend.
	Files bool `json:"files,omitempty"`
}

// Validate reports an error when a field holds a value outside its closed
// set, or when Language is empty.
func (c Capabilities) Validate() error {
	var errs []error
	if c.Language == "" {
		errs = append(errs, errors.New("spi: capabilities: empty language"))
	}
	if !c.Network.Valid() {
		errs = append(errs, fmt.Errorf("spi: capabilities: invalid network value %d", int(c.Network)))
	}
	if !c.WallClock.Valid() {
		errs = append(errs, fmt.Errorf("spi: capabilities: invalid wall clock value %d", int(c.WallClock)))
	}
	return errors.Join(errs...)
}
