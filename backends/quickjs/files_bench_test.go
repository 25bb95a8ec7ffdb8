package quickjs_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/spi"
)

// BenchmarkFiles is issue 44's figure: what files add to a run that sends
// and returns 1 MiB of files, on the backend (parked, the default). Each
// iteration runs the echo and then the echo that also reads a 1 MiB input
// file as bytes and writes it back as an output file; the metrics are the
// medians of each and the median of the per-iteration differences
// (interleaved, so that a loaded machine slows both alike).
//
//	go test -run '^$' -bench BenchmarkFiles -benchtime 200x ./backends/quickjs
func BenchmarkFiles(b *testing.B) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	limits := spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 32 << 20, MaxOutFiles: 1, MaxOutFileBytes: 1 << 20}
	echo := spi.Request{Script: []byte("input"), Input: []byte(`{"a":1,"b":"x"}`), Limits: limits}
	withFiles := echo
	withFiles.Script = []byte(`files.write("out.bin", files.read("in.bin", "bytes")); input`)
	withFiles.Files = []spi.File{{Name: "in.bin", Data: data}}

	be := benchBackend(b, quickjs.ModeParked, stopCheck)
	ctx := context.Background()
	run := func(req spi.Request) time.Duration {
		t0 := time.Now()
		out, err := be.Evaluate(ctx, req)
		d := time.Since(t0)
		if err != nil || out.Kind != spi.KindOK {
			b.Fatal(out, err)
		}
		if len(req.Files) > 0 && (len(out.Files) != 1 || len(out.Files[0].Data) != len(data)) {
			b.Fatal("the output file did not come back")
		}
		return d
	}
	run(withFiles) // first use: the pool's instances grow once
	var plain, files, delta []time.Duration
	b.ResetTimer()
	for range b.N {
		p := run(echo)
		f := run(withFiles)
		plain, files, delta = append(plain, p), append(files, f), append(delta, f-p)
	}
	b.StopTimer()
	b.ReportMetric(median(plain), "echo-p50-ms")
	b.ReportMetric(median(files), "files-p50-ms")
	b.ReportMetric(median(delta), "delta-p50-ms")
}

// median is the median of d in milliseconds.
func median(d []time.Duration) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2].Microseconds()) / 1000
}
