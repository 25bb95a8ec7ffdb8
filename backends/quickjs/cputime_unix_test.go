//go:build unix

package quickjs_test

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user and system) the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the process's CPU time per op since start as a metric:
// on a loaded machine it compares configurations better than wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((processCPU()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
