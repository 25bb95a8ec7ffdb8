package starlarkguest

import (
	"math"
	"strconv"
)

// MaxStderrBytes bounds what a run keeps of the guest's stderr (the Go
// runtime's fatal errors; the script cannot write there).
const MaxStderrBytes = 4 << 10

// Args are the guest's arguments after its name (guest/doc.go): the step
// budget, the result bound, the Go runtime's soft memory limit under a
// run's memory limit of memoryBytes (GoMemoryLimit), and whether the run
// has a log sink.
func Args(maxSteps, maxResult, memoryBytes int64, logs bool) []string {
	l := "0"
	if logs {
		l = "1"
	}
	return []string{
		strconv.FormatInt(maxSteps, 10),
		strconv.FormatInt(maxResult, 10),
		strconv.FormatInt(GoMemoryLimit(memoryBytes), 10),
		l,
	}
}

// StdoutLimit bounds the stdout kept for a run: the records, and a result
// the guest held in its memory (within the result bound).
func StdoutLimit(memoryBytes, maxResult int64) int {
	return int(min(memoryBytes, maxResult, math.MaxInt32-64<<10) + 64<<10)
}

// GoMemoryLimit is the guest Go runtime's soft memory limit
// (debug.SetMemoryLimit) under a run's memory limit of memoryBytes: seven
// eighths of it, so that the collector works harder before the hard cap
// (linear memory, or the native guest's cgroup) is reached and a script
// that holds half the limit still fits. It is the collector's only
// trigger: the guest turns GOGC off (guest/main.go).
func GoMemoryLimit(memoryBytes int64) int64 { return max(memoryBytes/8*7, 1) }
