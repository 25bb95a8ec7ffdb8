//go:build linux

package python

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// BenchmarkZygoteCPU: the CPU an echo forked from the zygote takes, on a
// zygote with the standard library only and on one with numpy, pandas
// and matplotlib: cpu-ms is the zygote's and its runs' (its forks, each
// run's preparation, script and exit, from the kernel's count of the
// zygote and the children it has reaped), host-ms this process's. Back
// to back on a machine with few cores, their sum over the cores bounds
// how fast runs follow each other.
func BenchmarkZygoteCPU(b *testing.B) {
	for _, c := range []struct {
		name     string
		packages []string
	}{{"stdlib", nil}, {"packages", []string{"matplotlib", "numpy", "pandas"}}} {
		b.Run(c.name, func(b *testing.B) {
			backend, err := New(&Options{Python: "/usr/bin/python3", Packages: c.packages})
			if err == nil {
				err = backend.Warm(context.Background())
			}
			if err != nil {
				b.Skipf("no such backend here: %v", err)
			}
			defer backend.Close()
			if err := backend.ZygoteStatus(context.Background()); err != nil {
				b.Skipf("no zygote here: %v", err)
			}
			req := spi.Request{Script: []byte("input"), Input: json.RawMessage(`{"n":7}`), Limits: spi.Limits{WallClock: 10 * time.Second, MemoryBytes: 64 << 20}}
			backend.zygotes.mu.Lock()
			z := backend.zygotes.cur
			backend.zygotes.mu.Unlock()
			var host0, host1 syscall.Rusage
			zygote0 := cpuTicks(b, z.pid)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &host0)
			for b.Loop() {
				if _, err := backend.Evaluate(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			// The last run or two may not have been reaped yet: one in b.N.
			zygote1 := cpuTicks(b, z.pid)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &host1)
			host := host1.Utime.Nano() + host1.Stime.Nano() - host0.Utime.Nano() - host0.Stime.Nano()
			b.ReportMetric(float64(zygote1-zygote0)*1000/float64(clockTicks)/float64(b.N), "cpu-ms")
			b.ReportMetric(float64(host)/1e6/float64(b.N), "host-ms")
		})
	}
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100

// cpuTicks is the CPU time of pid and of the children it has reaped
// (utime, stime, cutime and cstime in /proc/PID/stat), in clock ticks.
func cpuTicks(b *testing.B, pid int) int64 {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var sum int64
	for _, f := range fields[11:15] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		sum += n
	}
	return sum
}
