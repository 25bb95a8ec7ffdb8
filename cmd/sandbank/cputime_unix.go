//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system, all threads) the process
// used so far, or 0 when getrusage fails.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
