//go:build linux

package python_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	pyfixtures "github.com/sandbank/sandbank/fixtures/python"
	"github.com/sandbank/sandbank/spi"
)

// dataChartRequest is the data_chart job over a 10,000-row CSV.
func dataChartRequest() spi.Request {
	return spi.Request{
		Script: pyfixtures.DataChart(),
		Input:  json.RawMessage("null"),
		Files:  []spi.File{{Name: "data.csv", Data: pyfixtures.DataChartCSV(10000)}},
		Limits: spi.Limits{WallClock: 60 * time.Second, MemoryBytes: 256 << 20, MaxOutFiles: 4, MaxOutFileBytes: 1 << 20},
	}
}

// digests names each output file's SHA-256.
func digests(files []spi.File) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		sum := sha256.Sum256(f.Data)
		out[f.Name] = hex.EncodeToString(sum[:])
	}
	return out
}

// TestDataChart: the CSV → pandas → PNG job on the preloaded packages
// writes the same summary and chart in every run (fixed fonts, no
// metadata in the PNG): twice on one backend, and the digests checked
// in, which a run in another process must match.
func TestDataChart(t *testing.T) {
	b := newDataBackend(t, dataPackages...)
	var first map[string]string
	for i := range 2 {
		out, err := b.Evaluate(context.Background(), dataChartRequest())
		require.NoError(t, err)
		require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
		require.Len(t, out.Files, 2)
		assert.Equal(t, "chart.png", out.Files[0].Name)
		assert.Equal(t, "\x89PNG\r\n\x1a\n", string(out.Files[0].Data[:8]))
		assert.NotContains(t, string(out.Files[0].Data), "tEXt", "no metadata")
		assert.Equal(t, "summary.csv", out.Files[1].Name)
		assert.JSONEq(t, `{"rows":10000,"units":{"centre":125779,"east":229729,"north":241432,"south":269163,"west":126138}}`, string(out.Value))
		if i == 0 {
			first = digests(out.Files)
			t.Logf("digests %v", first)
			continue
		}
		assert.Equal(t, first, digests(out.Files), "the same files in every run")
	}
	assert.Equal(t, dataChartDigests, first)
}

// dataChartDigests are the job's files on Debian 12's python3-pandas
// 1.5.3 and python3-matplotlib 3.6.3 (CI's): another version may draw
// other bytes, which this test then shows.
var dataChartDigests = map[string]string{
	"chart.png":   "de2f077ebc8a62f2112a66e31c346559a76c6d20d6f9b2477ae1374d8a9edfbb",
	"summary.csv": "d5692ddbdb639a050de0dac1a741df168bf57ed74d7918d9b4416a3b61cb481d",
}

// BenchmarkDataChart: the data_chart job over a 10,000-row CSV on the
// preloaded packages (import numpy, pandas, matplotlib; read_csv;
// describe; a PNG), p50 per run.
func BenchmarkDataChart(b *testing.B) {
	benchPackages(b, dataChartRequest(), 0)
}

// BenchmarkEchoPackages: an echo on a backend with the three packages
// preloaded, runs back to back: on a machine with few cores, a run then
// waits for the CPU the previous ones' forks and exits take
// (BenchmarkZygoteCPU measures it).
func BenchmarkEchoPackages(b *testing.B) {
	benchPackages(b, echoPackagesRequest, 0)
}

// BenchmarkEchoPackagesPaced: the same echo, one run every 20 ms (an
// agent's pace: the run's process is prepared when its request comes).
func BenchmarkEchoPackagesPaced(b *testing.B) {
	benchPackages(b, echoPackagesRequest, 20*time.Millisecond)
}

var echoPackagesRequest = spi.Request{Script: []byte("input"), Input: benchInput, Limits: spi.Limits{WallClock: 10 * time.Second, MemoryBytes: 64 << 20}}

// benchPackages runs req on a backend with the data packages, gap apart
// (0: back to back), and reports the median run.
func benchPackages(b *testing.B, req spi.Request, gap time.Duration) {
	backend, err := python.New(&python.Options{Python: "/usr/bin/python3", Packages: dataPackages})
	require.NoError(b, err)
	defer backend.Close()
	if err := backend.Warm(context.Background()); err != nil {
		b.Skipf("no packages here: %v", err)
	}
	var took []time.Duration
	for b.Loop() {
		if gap > 0 {
			b.StopTimer()
			time.Sleep(gap)
			b.StartTimer()
		}
		start := time.Now()
		out, err := backend.Evaluate(context.Background(), req)
		require.NoError(b, err)
		require.Equal(b, spi.KindOK, out.Kind, "%+v", out)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}
