//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/storage"
)

// BenchmarkHostCallRoundTrip measures one host call's round trip (script
// to host function and back) per built-in engine: one run of host_loop
// makes b.N calls (MaxHostCalls), so ns/op is the time per call, the
// run's start-up amortised over b.N. cpu-ns/op is the process's CPU time
// (user and system, getrusage) per call, which a loaded machine inflates
// less than the wall time.
//
//	go test -run '^$' -bench HostCallRoundTrip ./cmd/sandbank/
func BenchmarkHostCallRoundTrip(b *testing.B) {
	reg, err := builtinRegistry()
	if err != nil {
		b.Fatal(err)
	}
	for _, entry := range reg.Engines() {
		b.Run(entry.Engine, func(b *testing.B) {
			set, ok := builtin.Fixtures(entry.Language)
			if !ok {
				b.Skip("no fixtures")
			}
			script, err := set.Script("host_loop")
			if err != nil {
				b.Skip(err)
			}
			backend, err := entry.Factory()
			if err != nil {
				b.Fatal(err)
			}
			e, err := effect.New(new(storage.MemoryStore), backend, &effect.Options{MaxHostCalls: b.N})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if err := e.Warm(context.Background()); err != nil {
				b.Fatal(err)
			}
			probe := func(context.Context, json.RawMessage) (any, error) { return json.RawMessage("1"), nil }
			// One run first, whose only call fails and ends it: the engine is
			// compiled and booted before the clocks start.
			stop := func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("stop") }
			_, _ = e.Evaluate(context.Background(), effect.Call{Source: script, Input: json.RawMessage(`{"a":1}`), Host: effect.HostFuncs{"probe": stop}})
			cpu0 := cpuTime()
			b.ResetTimer()
			_, err = e.Evaluate(context.Background(), effect.Call{Source: script, Input: json.RawMessage(`{"a":1}`),
				Host: effect.HostFuncs{"probe": probe}})
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			var f *effect.Failure
			if !errors.As(err, &f) || f.Kind != record.LimitHostCalls {
				b.Fatalf("host_loop must end in limitExceeded hostCalls, got %v", err)
			}
		})
	}
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
