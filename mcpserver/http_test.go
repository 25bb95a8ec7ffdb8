package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/spi"
)

const initializeBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// post sends one JSON-RPC body to the server, with the headers, and
// returns the response.
func post(t *testing.T, url, body string, header map[string]string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// reply reads the JSON-RPC response of an HTTP response: its JSON body,
// or the first message of its event stream.
func httpReply(t *testing.T, resp *http.Response) wireReply {
	t.Helper()
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = []byte(d)
				break
			}
		}
	} else {
		var err error
		data, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
	}
	var r wireReply
	require.NoError(t, json.Unmarshal(data, &r), "%s", data)
	return r
}

func serveHTTP(t *testing.T, srv *mcpserver.Server, opts *mcpserver.HTTPOptions) string {
	t.Helper()
	hs := httptest.NewServer(srv.HTTPHandler(opts))
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Close()
	})
	return hs.URL
}

// openSession initializes a session and returns its id.
func openSession(t *testing.T, url string) string {
	t.Helper()
	resp := post(t, url, initializeBody, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Nil(t, httpReply(t, resp).Error)
	id := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	resp = post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": id})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	return id
}

func TestHTTPRefusesAForeignOrigin(t *testing.T) {
	url := serveHTTP(t, newServer(t, newFakes(), nil, "javascript"), &mcpserver.HTTPOptions{AllowedOrigins: []string{"https://app.example.com"}})
	for origin, want := range map[string]int{
		"":                        http.StatusOK, // not a browser
		"http://localhost:5173":   http.StatusOK,
		"http://127.0.0.1:8080":   http.StatusOK,
		"https://[::1]":           http.StatusOK,
		"https://app.example.com": http.StatusOK, // allowed
		"http://evil.example":     http.StatusForbidden,
		"http://localhost.evil":   http.StatusForbidden,
		"https://app.example.org": http.StatusForbidden,
		"null":                    http.StatusForbidden,
	} {
		header := map[string]string{}
		if origin != "" {
			header["Origin"] = origin
		}
		resp := post(t, url, initializeBody, header)
		assert.Equal(t, want, resp.StatusCode, "Origin %q", origin)
	}
}

func TestHTTPRefusesARequestWithoutASession(t *testing.T) {
	url := serveHTTP(t, newServer(t, newFakes(), nil, "javascript"), nil)
	resp := post(t, url, `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`, nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	r := httpReply(t, resp)
	require.NotNil(t, r.Error)
	assert.Equal(t, int64(-32600), r.Error.Code)
	assert.JSONEq(t, `"l"`, string(r.ID))

	// With its session, the same request is served.
	id := openSession(t, url)
	resp = post(t, url, `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`, map[string]string{"Mcp-Session-Id": id})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Nil(t, httpReply(t, resp).Error)
}

func TestHTTPCancelledCallHasAStandardCode(t *testing.T) {
	f := newFakes()
	url := serveHTTP(t, newServer(t, f, &mcpserver.Options{Limits: spi.Limits{WallClock: time.Hour}}, "javascript"), nil)
	id := openSession(t, url)
	session := map[string]string{"Mcp-Session-Id": id}
	replied := make(chan wireReply, 1)
	go func() {
		resp := post(t, url, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"run_javascript","arguments":{"script":"block"}}}`, session)
		replied <- httpReply(t, resp)
	}()
	select {
	case <-f.started:
	case <-time.After(testTimeout):
		t.Fatal("the run did not start")
	}
	post(t, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`, session)
	select {
	case r := <-replied:
		assert.JSONEq(t, `"c"`, string(r.ID))
		require.NotNil(t, r.Error)
		assert.Equal(t, int64(mcpserver.CodeRequestCancelled), r.Error.Code)
	case <-time.After(testTimeout):
		t.Fatal("the cancelled call was not answered")
	}
}

func TestHTTPBoundsABodyToMaxMessageBytes(t *testing.T) {
	// A call above the SDK's own default bound (4 MiB), within the
	// server's, is served.
	url := serveHTTP(t, newServer(t, newFakes(), nil, "javascript"), nil)
	id := openSession(t, url)
	script := "echo" + strings.Repeat(" ", 5<<20)
	resp := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_javascript","arguments":{"script":"`+script+`","input":1}}}`, map[string]string{"Mcp-Session-Id": id})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := httpReply(t, resp)
	require.Nil(t, r.Error)
	assert.Contains(t, string(r.Result), `"ok":true`)

	// Above the server's bound, it is refused before it is read whole.
	srv := newServer(t, newFakes(), &mcpserver.Options{MaxScriptBytes: 1024, MaxInputBytes: 1024}, "javascript")
	url = serveHTTP(t, srv, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_javascript","arguments":{"script":"` + strings.Repeat(" ", int(srv.MaxMessageBytes())) + `"}}}`
	resp = post(t, url, body, map[string]string{"Mcp-Session-Id": openSession(t, url)})
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}
