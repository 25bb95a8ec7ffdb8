package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/tenant"
)

// routeCounter is a slog.Handler counting the access records of one
// route.
type routeCounter struct {
	route string
	n     *atomic.Int64
}

func (h routeCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h routeCounter) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "route" && a.Value.String() == h.route {
			h.n.Add(1)
		}
		return true
	})
	return nil
}
func (h routeCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h routeCounter) WithGroup(string) slog.Handler      { return h }

// hiddenRequest is a complete request, hidden in the tail of a body: it
// must never be served.
const hiddenRequest = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

// TestRefusedBodyClosesTheConnection: a response written before its
// request's body was read to the end (a body over the bound, a refusal
// before reading it) says Connection: close and closes the connection, so
// a request hidden in the rest of the body is never served and the
// connection never gets out of step. A body read to its end keeps the
// connection, in step.
func TestRefusedBodyClosesTheConnection(t *testing.T) {
	const bound = 1024
	var hidden atomic.Int64
	log := slog.New(routeCounter{"/healthz", &hidden})
	dev := startServer(t, testRegistry(t), &Options{MaxBodyBytes: bound, Logger: log})
	key, digest, err := tenant.NewKey()
	require.NoError(t, err)
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"a","keys":[%q],"ratePerSecond":0.001,"burst":1}]}`, digest))
	require.NoError(t, err)
	keyed := startServer(t, testRegistry(t), &Options{MaxBodyBytes: bound, Logger: log, Tenants: set})
	// Use up the tenant's one request, so the next is refused for its rate.
	use, err := http.NewRequest(http.MethodGet, keyed.url+"/v1/engines", nil)
	require.NoError(t, err)
	use.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(use)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	over := `{"engine":"goja","source":"` + strings.Repeat("x", 2*bound) + `"}` + hiddenRequest
	for _, tc := range []struct {
		name, url, path, headers, body string
		chunked                        bool
		status                         int
	}{
		{"runs: body over the bound", dev.url, "/v1/runs", "", over, false, http.StatusRequestEntityTooLarge},
		{"runs: chunked body over the bound", dev.url, "/v1/runs", "", over, true, http.StatusRequestEntityTooLarge},
		{"scripts: body over the bound", dev.url, "/v1/scripts", "", over, false, http.StatusRequestEntityTooLarge},
		{"scripts: chunked body over the bound", dev.url, "/v1/scripts", "", over, true, http.StatusRequestEntityTooLarge},
		{"runs: no API key", keyed.url, "/v1/runs", "", `{"engine":"goja","source":"1"}` + hiddenRequest, false, http.StatusUnauthorized},
		{"scripts: unknown API key", keyed.url, "/v1/scripts", "Authorization: Bearer nope\r\n", `{"source":"1"}` + hiddenRequest, true, http.StatusUnauthorized},
		{"runs: rate limited", keyed.url, "/v1/runs", "Authorization: Bearer " + key + "\r\n", `{"engine":"goja","source":"1"}` + hiddenRequest, false, http.StatusTooManyRequests},
		{"engines: a body nobody reads", keyed.url, "/v1/engines", "", hiddenRequest, false, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := hidden.Load()
			conn, err := net.Dial("tcp", strings.TrimPrefix(tc.url, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			method := http.MethodPost
			if tc.path == "/v1/engines" {
				method = http.MethodGet
			}
			req := method + " " + tc.path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + tc.headers
			if tc.chunked {
				req += fmt.Sprintf("Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(tc.body), tc.body)
			} else {
				req += fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(tc.body), tc.body)
			}
			_, err = io.WriteString(conn, req)
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode, "%s", b)
			assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			assert.True(t, resp.Close, "no Connection: close")
			_, err = br.ReadByte()
			assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "the connection stayed open: %v", err)
			assert.Equal(t, before, hidden.Load(), "the request hidden in the body was served")
		})
	}

	// A body read to its end keeps the connection, in step: the next
	// request on it is served.
	t.Run("a body read to its end", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(dev.url, "http://"))
		require.NoError(t, err)
		defer conn.Close()
		body := `{"engine":"goja","source":"1"`
		_, err = fmt.Fprintf(conn, "POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		require.NoError(t, err)
		_, err = io.WriteString(conn, "GET /v1/engines HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
		br := bufio.NewReader(conn)
		for _, status := range []int{http.StatusBadRequest, http.StatusOK} {
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			assert.Equal(t, status, resp.StatusCode)
			assert.False(t, resp.Close)
		}
	})
}

// TestKeepAliveClientAfterARefusedBody: an honest keep-alive client whose
// body was refused gets its Problem, and its next request a correct
// answer on a new connection (never a 400 for the rest of its body read
// as a request).
func TestKeepAliveClientAfterARefusedBody(t *testing.T) {
	const bound = 1024
	l := startServer(t, testRegistry(t), &Options{MaxBodyBytes: bound})
	c := &http.Client{Timeout: time.Minute}
	for _, path := range []string{"/v1/runs", "/v1/scripts"} {
		body := []byte(`{"engine":"goja","source":"` + strings.Repeat("x", 3*bound) + `"}`)
		req, err := http.NewRequest(http.MethodPost, l.url+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		assert.True(t, resp.Close)

		var reused atomic.Bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused.Store(i.Reused) }}
		ctx := httptrace.WithClientTrace(context.Background(), trace)
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, l.url+"/v1/runs", strings.NewReader(`{"engine":"goja","source":"input + 1","input":41}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err = c.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		assert.Contains(t, string(b), `"value":42`)
		assert.False(t, reused.Load(), "the refused request's connection was reused")
	}
}
