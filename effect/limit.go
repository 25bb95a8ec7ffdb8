package effect

import (
	"fmt"

	"github.com/sandbank/sandbank/spi"
)

// LimitKind names a limit of a typed failure. The zero value is invalid;
// values are never renumbered.
//
// It is a superset of spi.LimitKind: the kinds a backend reports (cpu,
// memory, wallClock) have the same names and the same numbers here, and
// [LimitKindOf] converts one to the other. The effect adds the limits it
// enforces itself: output (the result's size or depth) and input (the
// input ceiling). Compare a Failure's Kind with these constants, never with
// spi's.
type LimitKind int

// The limit kinds of a typed failure.
const (
	// LimitCPU: a CPU or step budget ran out (spi.LimitCPU).
	LimitCPU LimitKind = iota + 1
	// LimitMemory: the memory limit was reached (spi.LimitMemory); for
	// inputTooLarge, the input did not fit in the engine's memory while
	// being parsed.
	LimitMemory
	// LimitWallClock: the wall clock ran out (spi.LimitWallClock).
	LimitWallClock
	// LimitOutput: the result exceeded MaxOutputBytes or MaxOutputDepth.
	// The effect's own limit; no spi kind.
	LimitOutput
	// LimitInput: the input exceeded MaxInputBytes and was refused before
	// the run (inputTooLarge only). The effect's own limit; no spi kind.
	LimitInput
	// LimitHostCalls: the script made more host calls than MaxHostCalls
	// (Failure.Limit holds the bound). The effect's own limit; no spi
	// kind.
	LimitHostCalls
	// LimitSuspensions: a durable run suspended more often than its bound
	// (Durable.MaxSuspensions, in Failure.Limit). The effect's own limit.
	LimitSuspensions
	// LimitHostLog: a durable run's host-call log (the arguments and
	// answers it keeps for replay) grew past its bound
	// (Durable.MaxLogBytes, in Failure.Limit). The effect's own limit.
	LimitHostLog
	// LimitFiles: the script wrote more output files, or more bytes of
	// them, than the call's Limits.MaxOutFiles or MaxOutFileBytes allow
	// (spi.LimitFiles). When the effect found the bound passed in the
	// backend's outcome, Failure.Reason says which.
	LimitFiles
)

var limitNames = [...]string{LimitCPU: "cpu", LimitMemory: "memory", LimitWallClock: "wallClock", LimitOutput: "output", LimitInput: "input", LimitHostCalls: "hostCalls", LimitSuspensions: "suspensions", LimitHostLog: "hostLog", LimitFiles: "files"}

// Valid reports whether k is one of the defined limit kinds.
func (k LimitKind) Valid() bool { return k >= LimitCPU && k <= LimitFiles }

// String returns "cpu", "memory", "wallClock", "output", "input",
// "hostCalls", "suspensions", "hostLog" or "files".
func (k LimitKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("LimitKind(%d)", int(k))
	}
	return limitNames[k]
}

// LimitKindOf returns the effect's kind for a backend's kind: the one of
// the same name. It reports false for a kind outside spi's set.
func LimitKindOf(k spi.LimitKind) (LimitKind, bool) {
	switch k {
	case spi.LimitCPU:
		return LimitCPU, true
	case spi.LimitMemory:
		return LimitMemory, true
	case spi.LimitWallClock:
		return LimitWallClock, true
	case spi.LimitFiles:
		return LimitFiles, true
	default:
		return 0, false
	}
}
