package conformance

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// rssInterval is how often sampleRSS reads the host's memory.
const rssInterval = 2 * time.Millisecond

// hostMemory returns the memory the host process holds and how it was
// measured: the resident set from /proc/self/statm where it exists (Linux),
// otherwise the Go runtime's mapped memory (runtime/metrics
// /memory/classes/total:bytes less heap/released), which covers engines
// whose memory lives in the Go heap (wazero's linear memories, goja) but not
// memory allocated outside it.
func hostMemory() (int64, string) {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := bytes.Fields(b); len(f) >= 2 {
			if pages, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				return pages * int64(os.Getpagesize()), "RSS from /proc/self/statm"
			}
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var total, released int64
	if s[0].Value.Kind() == metrics.KindUint64 {
		total = int64(s[0].Value.Uint64())
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		released = int64(s[1].Value.Uint64())
	}
	return total - released, "Go runtime mapped memory"
}

// sampleRSS starts sampling the host's memory and returns a function that
// stops and reports the peak growth over the level at the start.
func sampleRSS() func() (int64, string) {
	base, how := hostMemory()
	var (
		mu   sync.Mutex
		peak = base
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(rssInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n, _ := hostMemory()
				mu.Lock()
				peak = max(peak, n)
				mu.Unlock()
			}
		}
	}()
	return func() (int64, string) {
		n, _ := hostMemory()
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return max(peak, n) - base, how
	}
}
