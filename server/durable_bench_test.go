package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// suspendedRuns is how many suspended runs BenchmarkSuspendedRuns keeps:
// issue 45's target.
const suspendedRuns = 10_000

// BenchmarkSuspendedRuns keeps 10,000 suspended runs in a server with a
// data directory, as 'sandbank serve' does, and reports what each costs
// while it waits: its continuation's bytes on disk (disk-B/run), the
// server's heap per run (heap-B/run: what the process holds for it, the
// receipt log's index included) and the goroutines left (goroutines-held,
// 0: a suspended run holds no goroutine, process or instance). Each
// iteration then resumes one of them over HTTP to its value (ns/op, and
// p50-ns/resume). Run it with
//
//	go test -run '^$' -bench BenchmarkSuspendedRuns -benchtime 200x ./server
func BenchmarkSuspendedRuns(b *testing.B) {
	reg := testRegistry(b)
	s, err := New(reg, &Options{Data: dataIn(b, b.TempDir(), nil)})
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	var last string
	do := func(path string, body any) (string, int) {
		raw, err := json.Marshal(body)
		require.NoError(b, err)
		req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		last = w.Body.String()
		return w.Header().Get(RunHeader), w.Code
	}
	run := map[string]any{"engine": "quickjs", "source": `const ok = await host.approve({rows: input.n}); ({ok, n: input.n})`,
		"input": map[string]any{"n": 40}, "suspend": []string{"approve"}}
	do("/v1/runs", run) // the engine built and warm before anything is measured

	settle := func() runtime.MemStats {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m
	}
	before, goroutines := settle(), runtime.NumGoroutine()
	runs := make([]string, suspendedRuns)
	for i := range runs {
		id, code := do("/v1/runs", run)
		require.Equal(b, http.StatusOK, code, "run %d: %s", i, last)
		runs[i] = id
	}
	after := settle()
	store, err := s.data.Continuations("dev")
	require.NoError(b, err)
	n, diskBytes := store.Len()
	require.Equal(b, suspendedRuns+1, n)
	heap := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / suspendedRuns
	held := float64(max(0, runtime.NumGoroutine()-goroutines))
	b.Logf("%d runs suspended (%d bytes of continuations)", n, diskBytes)

	took := make([]time.Duration, 0, 256)
	i := 0
	for b.Loop() {
		require.Less(b, i, suspendedRuns, "-benchtime at most %dx", suspendedRuns)
		start := time.Now()
		_, code := do("/v1/runs/"+runs[i]+"/resume", map[string]any{"answer": true})
		took = append(took, time.Since(start))
		require.Equal(b, http.StatusOK, code, last)
		i++
	}
	b.ReportMetric(float64(diskBytes)/float64(n), "disk-B/run")
	b.ReportMetric(heap, "heap-B/run")
	b.ReportMetric(held, "goroutines-held")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/resume")
}
