package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/tenant"
)

// job is one request of the load and what its response must be.
type job struct {
	body    map[string]any
	value   string // the expected value as JSON text, or
	failure string // the expected failure code
	kind    string // and limit kind, if any
}

// mix is the load's mixture of good and hostile scripts: goja and
// starlark for most, quickjs for a slice.
func mix(i int) job {
	n := i % 1000
	switch i % 20 {
	case 0, 1, 2, 3, 4, 5:
		return job{body: map[string]any{"engine": "goja", "source": "input.n * 2", "input": map[string]int{"n": n}}, value: strconv.Itoa(2 * n)}
	case 6, 7, 8, 9:
		return job{body: map[string]any{"engine": "starlark", "source": "def main(input):\n    return [input['n'], 'x' * 3]\n", "input": map[string]int{"n": n}},
			value: fmt.Sprintf(`[%d,"xxx"]`, n)}
	case 10:
		return job{body: map[string]any{"engine": "goja", "source": "for(;;){}", "limits": map[string]int{"wallClockMs": 50}}, failure: "limitExceeded", kind: "wallClock"}
	case 11:
		return job{body: map[string]any{"engine": "goja", "source": "throw new RangeError('no ' + input)", "input": n}, failure: "scriptError"}
	case 12:
		return job{body: map[string]any{"engine": "goja", "source": "function f(){return f()} f()"}, failure: "scriptError|limitExceeded"}
	case 13:
		return job{body: map[string]any{"engine": "starlark", "source": "def main(input):\n    for i in range(1000000000):\n        pass\n"}, failure: "limitExceeded"}
	case 14:
		return job{body: map[string]any{"engine": "starlark", "source": "def main(input):\n    fail('hostile')\n"}, failure: "scriptError"}
	case 15:
		return job{body: map[string]any{"engine": "goja", "source": "({a: input})", "shape": map[string]string{"type": "string"}, "input": n}, failure: "shapeMismatch"}
	case 16:
		return job{body: map[string]any{"engine": "goja", "source": "'\\u0000\\ud800' + input", "input": n}, value: fmt.Sprintf(`"\u0000\ufffd%d"`, n)}
	case 17:
		return job{body: map[string]any{"engine": "quickjs", "source": "input.n + 1", "input": map[string]int{"n": n}}, value: strconv.Itoa(n + 1)}
	case 18:
		return job{body: map[string]any{"engine": "quickjs", "source": "for(;;){}", "limits": map[string]int{"wallClockMs": 50}}, failure: "limitExceeded", kind: "wallClock"}
	default:
		return job{body: map[string]any{"engine": "goja", "source": "1", "bogus": true}, failure: "422"}
	}
}

// outcome checks one response against its job and returns what is wrong,
// or "".
func (j job) outcome(code int, b []byte) string {
	if j.failure == "422" {
		var p Problem
		if code != 422 || json.Unmarshal(b, &p) != nil || p.Kind != KindInvalidCall {
			return fmt.Sprintf("want a 422 invalidCall, got %d %.200s", code, b)
		}
		return ""
	}
	if code != http.StatusOK {
		return fmt.Sprintf("want 200, got %d %.200s", code, b)
	}
	var rec struct {
		Value   json.RawMessage `json:"value"`
		Failure *struct {
			Code string `json:"code"`
			Kind string `json:"kind"`
		} `json:"failure"`
		Receipt struct {
			Engine string `json:"engine"`
		} `json:"receipt"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return "undecodable record: " + err.Error()
	}
	if rec.Receipt.Engine != j.body["engine"] {
		return "wrong engine " + rec.Receipt.Engine
	}
	switch {
	case j.value != "":
		var want, got any
		_ = json.Unmarshal([]byte(j.value), &want)
		if rec.Failure != nil || json.Unmarshal(rec.Value, &got) != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("want value %s, got %s %v", j.value, rec.Value, rec.Failure)
		}
	case rec.Failure == nil || !slices.Contains(strings.Split(j.failure, "|"), rec.Failure.Code) || (j.kind != "" && rec.Failure.Kind != j.kind):
		return fmt.Sprintf("want failure %s %s, got %s %+v", j.failure, j.kind, rec.Value, rec.Failure)
	}
	return ""
}

func postJSON(ctx context.Context, c *http.Client, url, key string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// rssBytes reads the process's resident set size (Linux); 0 elsewhere.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestLoad: 2,000 requests at concurrency 64, a mixture of good and
// hostile scripts, against a real server on 127.0.0.1. Every response is
// the right one and typed, none is lost, and afterwards the goroutines
// and the RSS are back near their baseline (margins stated below). The
// figures are logged (go test -run TestLoad -v ./server/), never
// asserted.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const total, concurrency = 2000, 64
	// A queue as deep as the clients and a long queue timeout: on a
	// loaded 2-core machine every request must still get its run.
	l := startServer(t, testRegistry(t), &Options{MaxQueue: concurrency, QueueTimeout: 2 * time.Minute})
	tr := &http.Transport{MaxIdleConnsPerHost: concurrency}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	ctx := context.Background()

	// Warm every engine (its Effect is built on first use), then take the
	// baseline.
	for i := range 20 {
		j := mix(i)
		code, b, err := postJSON(ctx, c, l.url+"/v1/runs", "", j.body)
		require.NoError(t, err)
		require.Empty(t, j.outcome(code, b))
	}
	tr.CloseIdleConnections()
	runtime.GC()
	debug.FreeOSMemory()
	baseG, baseRSS := runtime.NumGoroutine(), rssBytes()

	var (
		next   atomic.Int64
		mu     sync.Mutex
		wrong  []string
		lat    = make([]time.Duration, 0, total)
		good   []time.Duration              // runs that return a value
		runNs  = map[string]time.Duration{} // the server-side run time, by job class
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				j := mix(i)
				t0 := time.Now()
				code, b, err := postJSON(ctx, c, l.url+"/v1/runs", "", j.body)
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				if j.value != "" {
					good = append(good, d)
				}
				counts[code]++
				if err != nil {
					wrong = append(wrong, fmt.Sprintf("request %d: %v", i, err))
				} else if msg := j.outcome(code, b); msg != "" {
					wrong = append(wrong, fmt.Sprintf("request %d: %s", i, msg))
				}
				var st struct {
					Stats struct {
						Duration time.Duration `json:"durationNs"`
					} `json:"stats"`
				}
				if code == http.StatusOK && json.Unmarshal(b, &st) == nil {
					src, _ := j.body["source"].(string)
					runNs[fmt.Sprintf("%s %.24q", j.body["engine"], src)] += st.Stats.Duration
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	assert.Len(t, lat, total, "every request got a response")
	assert.Empty(t, wrong, "every response is the right one")
	slices.Sort(lat)
	slices.Sort(good)
	classes := slices.Collect(maps.Keys(runNs))
	slices.SortFunc(classes, func(a, b string) int { return int(runNs[b] - runNs[a]) })
	for _, k := range classes[:min(5, len(classes))] {
		t.Logf("load: server-side run time of %s: %s in all", k, runNs[k].Round(time.Millisecond))
	}
	if len(good) > 0 {
		t.Logf("load: the %d runs that return a value: p50 %s, p99 %s", len(good), good[len(good)/2].Round(time.Microsecond), good[len(good)*99/100].Round(time.Microsecond))
	}
	t.Logf("load: %d requests at concurrency %d in %s: %.0f requests/s, p50 %s, p99 %s, max %s; statuses %v",
		total, concurrency, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond), counts)

	// Back to baseline: the connections closed, the goroutines the load
	// made end (within 30 s; 10 goroutines of slack for the runtime's and
	// the HTTP stack's own), and the heap handed back leaves the RSS
	// within 256 MiB of the baseline (the engines' pools and Go's heap
	// keep some).
	tr.CloseIdleConnections()
	var g int
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		g = runtime.NumGoroutine()
		if g <= baseG+10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	debug.FreeOSMemory()
	rss := rssBytes()
	t.Logf("goroutines: baseline %d, after %d; RSS: baseline %d MiB, after %d MiB", baseG, g, baseRSS>>20, rss>>20)
	assert.LessOrEqual(t, g, baseG+10, "goroutines back to baseline")
	if baseRSS > 0 {
		assert.Less(t, rss-baseRSS, int64(256<<20), "RSS back near baseline")
	}
	assert.Zero(t, l.admission.inFlight())
	assert.Zero(t, l.admission.waiting.Load())
}

// TestRateLimitIsPerTenant: a tenant over its rate limit gets 429s while
// another tenant's requests all succeed.
func TestRateLimitIsPerTenant(t *testing.T) {
	ka, da, _ := tenant.NewKey()
	kb, db, _ := tenant.NewKey()
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"limited","keys":[%q],"ratePerSecond":2,"burst":5},{"name":"free","keys":[%q],"maxConcurrentRuns":16}]}`, da, db))
	require.NoError(t, err)
	l := startServer(t, testRegistry(t), &Options{Tenants: set, MaxQueue: 64, QueueTimeout: 2 * time.Minute})
	c := &http.Client{Timeout: 5 * time.Minute}
	const each = 96 // per tenant: 8 clients of 12 requests
	var wg sync.WaitGroup
	var mu sync.Mutex
	status := map[string]map[int]int{"limited": {}, "free": {}}
	start := time.Now()
	for w := range 16 {
		wg.Go(func() {
			for i := range each / 8 {
				name, key := "limited", ka
				if w%2 == 1 {
					name, key = "free", kb
				}
				code, b, err := postJSON(context.Background(), c, l.url+"/v1/runs", key, map[string]any{"engine": "starlark", "source": "def main(input):\n    return input\n", "input": i})
				mu.Lock()
				if err != nil {
					status[name][-1]++
				} else {
					status[name][code]++
					if code == http.StatusTooManyRequests {
						var p Problem
						if json.Unmarshal(b, &p) != nil || p.Kind != KindQuota || !p.Retryable {
							status[name][-2]++
						}
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("rate limit: in %s, limited tenant %v (%.0f%% success), free tenant %v (%.0f%% success)", elapsed.Round(time.Millisecond),
		status["limited"], 100*float64(status["limited"][200])/each, status["free"], 100*float64(status["free"][200])/each)
	assert.Equal(t, each, status["free"][200], "the other tenant is unaffected")
	assert.Positive(t, status["limited"][429])
	assert.Equal(t, each, status["limited"][200]+status["limited"][429], "only 200s and well-formed 429s")
	// The bucket: 5 at once, then 2 a second (+1 for rounding).
	assert.LessOrEqual(t, float64(status["limited"][200]), 5+2*elapsed.Seconds()+1)
}

// TestShutdownDuringLoad: Shutdown while requests are flowing. Every
// request gets a right response, a retryable 503, or a connection error;
// never a wrong value. Runs past the drain deadline are cancelled.
func TestShutdownDuringLoad(t *testing.T) {
	// The long runs' wall clock is a minute: they never end by themselves
	// before Shutdown cancels them, and hold four of the eight run slots.
	s, err := New(testRegistry(t), &Options{MaxConcurrentRuns: 8, MaxQueue: 64, QueueTimeout: time.Minute, Limits: spi.Limits{WallClock: time.Minute}})
	require.NoError(t, err)
	ln, err := newLoopbackListener()
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c := &http.Client{Timeout: 2 * time.Minute}

	var (
		mu              sync.Mutex
		ok, retry, conn int
		cancelled       int // 503s of runs cancelled at the drain deadline
		wrong           []string
		wg              sync.WaitGroup
		stop            atomic.Bool
		answered        atomic.Int64
	)
	for w := range 16 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				j := mix(w*1000 + i)
				if w%4 == 0 {
					// Some runs outlive the drain deadline.
					j = job{body: map[string]any{"engine": "quickjs", "source": "for(;;){}", "limits": map[string]int{"wallClockMs": 60000}}, failure: "limitExceeded", kind: "wallClock"}
				}
				code, b, err := postJSON(context.Background(), c, url+"/v1/runs", "", j.body)
				answered.Add(1)
				mu.Lock()
				switch {
				case err != nil:
					conn++
					mu.Unlock()
					time.Sleep(10 * time.Millisecond) // the listener is gone: do not spin
					continue
				case code == http.StatusServiceUnavailable:
					var p Problem
					if json.Unmarshal(b, &p) != nil || !p.Retryable || b == nil {
						wrong = append(wrong, fmt.Sprintf("a 503 that is not a retryable Problem: %.200s", b))
					}
					if strings.Contains(p.Detail, "the run was cancelled") || strings.Contains(p.Detail, "cancelled while queued") {
						cancelled++
					}
					retry++
				default:
					if msg := j.outcome(code, b); msg != "" {
						wrong = append(wrong, msg)
					}
					ok++
				}
				mu.Unlock()
			}
		})
	}
	waitFor(t, func() bool {
		return answered.Load() >= 100 && testutil.ToFloat64(s.metrics.inFlight.WithLabelValues("quickjs")) >= 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	shutdownStart := time.Now()
	err = s.Shutdown(ctx)
	took := time.Since(shutdownStart)
	assert.NoError(t, err)
	assert.ErrorIs(t, <-served, http.ErrServerClosed)
	// The drain is 0.5 s and the handlers' grace 5 s; 30 s is a wide
	// margin for "it stopped at all".
	assert.Less(t, took, 30*time.Second)
	// A few requests after the close: the workers are still sending, and
	// each of these meets a closed listener.
	closedAt := answered.Load()
	waitFor(t, func() bool { return answered.Load() >= closedAt+16 })
	stop.Store(true)
	wg.Wait()
	t.Logf("shutdown during load: %d right answers, %d retryable 503s (%d runs cancelled at the deadline), %d connection errors; Shutdown took %s", ok, retry, cancelled, conn, took.Round(time.Millisecond))
	assert.Empty(t, wrong)
	// Shutdown began with a long run (a loop on quickjs with a minute's
	// wall clock) in flight: it still is at the 0.5 s drain deadline.
	assert.Positive(t, cancelled, "the long runs past the deadline were cancelled with a retryable 503")

	// After Shutdown a run cannot start.
	_, err = s.pool.Effect("goja")
	assert.True(t, errors.Is(err, effect.ErrClosed))
}
