//go:build unix

package conformance

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user plus system) the whole process
// has used, from getrusage(RUSAGE_SELF).
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
