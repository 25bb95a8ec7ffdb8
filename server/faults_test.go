package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/tenant"
)

// sendRaw posts body with the content type and returns the status and
// the Problem's kind (empty for a 200).
func sendRaw(t *testing.T, c *http.Client, url, ct string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/runs", body)
	require.NoError(t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var p Problem
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = json.Unmarshal(b, &p)
	return resp.StatusCode, p.Kind
}

// goodRun checks the server still runs a script correctly.
func goodRun(t *testing.T, c *http.Client, url string) {
	t.Helper()
	code, _, body := post(t, c, url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "input.n + 1", "input": map[string]int{"n": 41}})
	require.Equal(t, http.StatusOK, code, "%v", body)
	assert.Equal(t, 42.0, body["value"])
}

// TestHostileRequests: each is a clear 4xx, and the server is unaffected.
func TestHostileRequests(t *testing.T) {
	l := startServer(t, testRegistry(t), &Options{MaxBodyBytes: 1 << 20, ReadHeaderTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second})
	c := &http.Client{Timeout: time.Minute}
	goodRun(t, c, l.url)
	const js = "application/json"
	for _, tc := range []struct {
		name   string
		ct     string
		body   io.Reader
		status int
	}{
		{"malformed JSON", js, strings.NewReader(`{"engine":"goja",`), 400},
		{"not an object", js, strings.NewReader(`[1,2]`), 422},
		{"binary garbage", js, strings.NewReader("\x00\xff\xfe{"), 400},
		{"empty body", js, strings.NewReader(``), 400},
		{"unknown field", js, strings.NewReader(`{"engine":"goja","source":"1","sourcee":"2"}`), 422},
		{"wrong type", js, strings.NewReader(`{"engine":["goja"],"source":"1"}`), 422},
		{"wrong content type", "text/plain", strings.NewReader(`{"engine":"goja","source":"1"}`), 415},
		{"form content type", "application/x-www-form-urlencoded", strings.NewReader(`engine=goja`), 415},
		{"both source and script", js, strings.NewReader(`{"engine":"goja","source":"1","script":"sha256:` + strings.Repeat("a", 64) + `"}`), 400},
		{"malformed address", js, strings.NewReader(`{"engine":"goja","script":"sha256:xyz"}`), 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, kind := sendRaw(t, c, l.url, tc.ct, tc.body)
			assert.Equal(t, tc.status, code)
			assert.Equal(t, KindInvalidCall, kind)
		})
	}
	// A huge body, announced or chunked: 413 once the bound is read, not
	// after the whole body. The client stops sending past the bound and
	// reads the answer (an http.Client still writing would see the
	// connection reset instead, which is as good a refusal).
	addr := strings.TrimPrefix(l.url, "http://")
	for _, chunked := range []bool{false, true} {
		assert.Equal(t, http.StatusRequestEntityTooLarge, hugeBody(t, addr, 1<<20, chunked), "chunked %v", chunked)
	}
	goodRun(t, c, l.url)
}

// hugeBody announces a 64 MiB body (or sends it chunked), sends a little
// more than bound bytes of it, and returns the status of the answer.
func hugeBody(t *testing.T, addr string, bound int, chunked bool) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	head := "POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	if chunked {
		head += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		head += "Content-Length: 67108864\r\n\r\n"
	}
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	chunk := strings.Repeat(" ", 64<<10)
	for sent := 0; sent <= bound; sent += len(chunk) {
		out := chunk
		if chunked {
			out = fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk)
		}
		if _, err := io.WriteString(conn, out); err != nil {
			break // the server refused already
		}
	}
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestSlowClients: a client that sends its headers or its body slowly
// loses its connection after the read timeouts, and does not hold up
// anyone else.
func TestSlowClients(t *testing.T) {
	l := startServer(t, testRegistry(t), &Options{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: time.Second})
	addr := strings.TrimPrefix(l.url, "http://")
	c := &http.Client{Timeout: time.Minute}

	var wg sync.WaitGroup
	closed := make([]error, 8)
	for i := range closed {
		wg.Go(func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				closed[i] = err
				return
			}
			defer conn.Close()
			// Half the clients drip their headers, half their body.
			start := "POST /v1/runs HTTP/1.1\r\nHost: x\r\n"
			if i%2 == 1 {
				start += "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
			}
			if _, err := io.WriteString(conn, start); err != nil {
				closed[i] = err
				return
			}
			// Drip one byte every 100 ms for at most 30 s (the timeouts are
			// 0.3 s and 1 s): the server must hang up long before.
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				if _, err := conn.Write([]byte("x")); err != nil {
					closed[i] = err
					return
				}
				_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				buf := make([]byte, 512)
				if n, err := conn.Read(buf); n > 0 || (err != nil && !isTimeout(err)) {
					closed[i] = fmt.Errorf("server answered or hung up: %q %v", buf[:n], err)
					return
				}
			}
		})
	}
	// Meanwhile, the server serves.
	for range 5 {
		goodRun(t, c, l.url)
	}
	wg.Wait()
	for i, err := range closed {
		assert.Error(t, err, "slow client %d was never cut off", i)
	}
	goodRun(t, c, l.url)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestOverloadIsAQuick503: with one run slot and a queue of one, a third
// run is refused at once, and the queued one after the queue timeout,
// both retryable 503s with Retry-After.
func TestOverloadIsAQuick503(t *testing.T) {
	l := startServer(t, testRegistry(t), &Options{MaxConcurrentRuns: 1, MaxQueue: 1, QueueTimeout: 300 * time.Millisecond})
	c := &http.Client{Timeout: time.Minute}
	goodRun(t, c, l.url) // builds the engine
	long := make(chan int, 1)
	go func() {
		code, _, _ := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "for(;;){}", "limits": map[string]int{"wallClockMs": 3000}})
		long <- code
	}()
	waitFor(t, func() bool { return l.admission.inFlight() == 1 })
	queued := make(chan map[string]any, 1)
	go func() {
		_, _, body := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "1"})
		queued <- body
	}()
	waitFor(t, func() bool { return l.admission.waiting.Load() == 1 })
	code, h, body := post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "1"})
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, KindOverloaded, body["kind"])
	assert.Equal(t, true, body["retryable"])
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Contains(t, body["detail"], "queue is full")
	q := <-queued
	assert.Equal(t, KindOverloaded, q["kind"])
	assert.Contains(t, q["detail"], "queue timeout")
	assert.Equal(t, http.StatusOK, <-long, "the long run ends with its typed failure")
	goodRun(t, c, l.url)
}

// TestTenantCap: a tenant at its concurrent-run cap gets 429; another
// tenant is unaffected.
func TestTenantCap(t *testing.T) {
	ka, da, _ := tenant.NewKey()
	kb, db, _ := tenant.NewKey()
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"a","keys":[%q],"maxConcurrentRuns":1},{"name":"b","keys":[%q]}]}`, da, db))
	require.NoError(t, err)
	l := startServer(t, testRegistry(t), &Options{Tenants: set})
	c := &http.Client{Timeout: time.Minute}
	done := make(chan int, 1)
	go func() {
		code, _, _ := post(t, c, l.url+"/v1/runs", ka, map[string]any{"engine": "goja", "source": "for(;;){}", "limits": map[string]int{"wallClockMs": 2000}})
		done <- code
	}()
	waitFor(t, func() bool { return l.admission.inFlight() == 1 })
	code, h, body := post(t, c, l.url+"/v1/runs", ka, map[string]any{"engine": "goja", "source": "1"})
	assert.Equal(t, http.StatusTooManyRequests, code)
	assert.Equal(t, KindQuota, body["kind"])
	assert.NotEmpty(t, h.Get("Retry-After"))
	code, _, body = post(t, c, l.url+"/v1/runs", kb, map[string]any{"engine": "goja", "source": "2"})
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 2.0, body["value"])
	assert.Equal(t, http.StatusOK, <-done)
}

// waitFor polls cond for at most 30 s (a wide margin on a loaded machine).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition never held")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestWarmBuildsBeforeTheFirstRun: Warm builds the engines it is asked
// for, and an unknown engine is the caller's mistake.
func TestWarmBuildsBeforeTheFirstRun(t *testing.T) {
	s, err := New(testRegistry(t), nil)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Warm(context.Background(), "goja"))
	err = s.Warm(context.Background(), "nonesuch")
	assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
	require.NoError(t, s.Close())
	assert.Equal(t, effect.KindClosed, effect.KindOf(s.Warm(context.Background(), "goja")))
}
