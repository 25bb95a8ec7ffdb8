package starlarknative

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// BenchmarkEchoSpareReady: one echo per iteration, each started once the
// last run's child is reaped and the spares are all ready again (the
// wait is outside the timer), as a request finds the engine between
// bursts: go test -run '^$' -bench EchoSpareReady ./backends/starlarknative
// (back-to-back echoes, which outrun the spares' starts, are
// BenchmarkEcho in backends/starlarkwasm).
func BenchmarkEchoSpareReady(b *testing.B) {
	be, err := New(nil)
	require.NoError(b, err)
	defer be.Close()
	req := spi.Request{Script: []byte("def main(input):\n    return input\n"), Input: []byte(`{"a":1,"b":"x"}`)}
	var took []time.Duration
	for b.Loop() {
		b.StopTimer()
		be.reaping.Wait()
		for len(be.spares.ready) < cap(be.spares.ready) {
			time.Sleep(100 * time.Microsecond) // a benchmark's wait, outside the timer
		}
		b.StartTimer()
		t0 := time.Now()
		if _, err := be.Evaluate(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
}
