package codemode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/codemode"
	"github.com/sandbank/sandbank/effect"
)

// hugeAnswerBytes is what the huge tool of hugeHTTP would send: four
// times MaxUpstreamMessageBytes, far more than the client may read.
const hugeAnswerBytes = 4 * codemode.MaxUpstreamMessageBytes

// hugeHTTP serves u's server over streamable HTTP, except a call of the
// tool "huge", which it answers with hugeAnswerBytes of one tool result
// (as one JSON body, or as one server-sent event when events is set),
// written as it goes, never held; written counts what it wrote.
func hugeHTTP(t *testing.T, u *upstream, events bool) (url string, written *atomic.Int64) {
	t.Helper()
	return hugeHTTPOf(t, u, events, hugeAnswerBytes)
}

// hugeHTTPOf is hugeHTTP with an answer of size bytes.
func hugeHTTPOf(t testing.TB, u *upstream, events bool, size int64) (url string, written *atomic.Int64) {
	t.Helper()
	written = new(atomic.Int64)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &req) != nil || req.Params.Name != "huge" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		head := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text","text":"`
		if events {
			w.Header().Set("Content-Type", "text/event-stream")
			head = "event: message\ndata: " + head
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		n, err := w.Write([]byte(head))
		written.Add(int64(n))
		for err == nil && written.Load() < size {
			n, err = w.Write(chunk)
			written.Add(int64(n))
		}
		if err == nil {
			n, _ = w.Write([]byte(`"}]}}` + "\n\n"))
			written.Add(int64(n))
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL, written
}

// TestUpstreamHTTPAnswerBounded: an HTTP upstream's answer past
// MaxUpstreamMessageBytes, as a JSON body or as a server-sent event, is
// not read past the bound: the call fails with upstreamTooLarge (not
// retryable: the same call gets the same answer) long before the
// upstream could write all of it, and the next call gets a new session.
func TestUpstreamHTTPAnswerBounded(t *testing.T) {
	for name, events := range map[string]bool{"json": false, "events": true} {
		t.Run(name, func(t *testing.T) {
			u := newUpstream()
			u.srv.AddTool(&mcp.Tool{Name: "huge", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New("answered by hugeHTTP")
			})
			url, written := hugeHTTP(t, u, events)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			up, err := codemode.ConnectUpstream(ctx, "up", func() mcp.Transport {
				return &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1}
			}, nil)
			require.NoError(t, err)
			defer up.Close()

			v, err := up.HostFuncs()["up__huge"](ctx, json.RawMessage(`{}`))
			require.Error(t, err, "a value of %d bytes", len(asJSON(t, v)))
			assert.Equal(t, "mcpserver: upstreamTooLarge: up.huge: the upstream's answer is over the bound on an upstream message (MaxUpstreamMessageBytes)", err.Error())
			assert.ErrorIs(t, err, effect.ErrInvalidCall)
			// The client stopped reading at the bound: what the upstream
			// wrote is the bound and what the loopback's socket buffers
			// hold (a few MiB), far from the whole answer.
			assert.Less(t, written.Load(), int64(hugeAnswerBytes), "the client read the whole answer")

			got, code := callUp(t, up, "item", `{"id": 3}`)
			require.Zero(t, code)
			assert.JSONEq(t, `{"id":3,"name":"item-3"}`, string(got))
		})
	}
}

// TestUpstreamStdioAnswerBounded: a stdio upstream's line past
// MaxUpstreamMessageBytes (the SDK's bound) fails the call the same way
// as over HTTP, and the next call gets a new session.
func TestUpstreamStdioAnswerBounded(t *testing.T) {
	u := newUpstream()
	u.srv.AddTool(&mcp.Tool{Name: "huge", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", codemode.MaxUpstreamMessageBytes)}}}, nil
	})
	dial, _ := u.dialer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	up, err := codemode.ConnectUpstream(ctx, "up", dial, nil)
	require.NoError(t, err)
	defer up.Close()
	_, code := callUp(t, up, "huge", `{}`)
	assert.Equal(t, codemode.UpstreamTooLarge, code)
	got, code := callUp(t, up, "item", `{"id": 4}`)
	require.Zero(t, code)
	assert.JSONEq(t, `{"id":4,"name":"item-4"}`, string(got))
}

func asJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// exactNumbers is structured content whose numbers a float64 would
// round: 2^53+1, an integer past uint64, and a decimal of 20 digits.
const exactNumbers = `{"id":9007199254740993,"big":123456789012345678901234567890,"price":0.12345678901234567891}`

// TestUpstreamNumbersExact: an upstream's structured content reaches the
// script with its numbers as the upstream wrote them, over a byte stream
// and over HTTP (as a JSON body and as an event), as every other path
// keeps them.
func TestUpstreamNumbersExact(t *testing.T) {
	exactTool := func(u *upstream) {
		u.srv.AddTool(&mcp.Tool{Name: "exact", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(exactNumbers)}, nil
		})
		u.srv.AddTool(&mcp.Tool{Name: "exact-secret", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(strings.TrimSuffix(exactNumbers, "}") + `,"note":"key 9007199254740993"}`)}, nil
		})
	}
	dials := map[string]func(t *testing.T, u *upstream) func() mcp.Transport{
		"stdio": func(t *testing.T, u *upstream) func() mcp.Transport { d, _ := u.dialer(t); return d },
	}
	for name, jsonResponse := range map[string]bool{"http json": true, "http events": false} {
		dials[name] = func(t *testing.T, u *upstream) func() mcp.Transport {
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			return func() mcp.Transport {
				return &mcp.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true, MaxRetries: -1}
			}
		}
	}
	for name, dial := range dials {
		t.Run(name, func(t *testing.T) {
			u := newUpstream()
			exactTool(u)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			up, err := codemode.ConnectUpstream(ctx, "up", dial(t, u), nil)
			require.NoError(t, err)
			defer up.Close()
			got, code := callUp(t, up, "exact", `{}`)
			require.Zero(t, code)
			assert.Equal(t, exactNumbers, string(got))
			// Redaction decodes and encodes again: exact too.
			up2, err := codemode.ConnectUpstream(ctx, "up", dial(t, u), &codemode.UpstreamOptions{Redact: []string{"9007199254740993"}})
			require.NoError(t, err)
			defer up2.Close()
			got, code = callUp(t, up2, "exact_secret", `{}`)
			require.Zero(t, code)
			assert.Equal(t, `{"big":123456789012345678901234567890,"id":9007199254740993,"note":"key [redacted]","price":0.12345678901234567891}`, string(got))
		})
	}
}

// TestUpstreamNumbersExactThroughMCP: through the MCP door, a Starlark
// script (whose integers are exact) gets 2^53+1 from an upstream's
// structured content, and computes with it (as text: the test's own MCP
// client would round a number of the run's answer).
func TestUpstreamNumbersExactThroughMCP(t *testing.T) {
	u := newUpstream()
	u.srv.AddTool(&mcp.Tool{Name: "exact", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"id":9007199254740993}`)}, nil
	})
	dial, _ := u.dialer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	up, err := codemode.ConnectUpstream(ctx, "up", dial, nil)
	require.NoError(t, err)
	defer up.Close()
	cs := codeModeOf(t, up, nil)
	r := runTool(t, cs, "run_starlark", `def main(input):
    id = host.up__exact({})["id"]
    return {"id": str(id), "next": str(id + 1)}
`, nil)
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, `{"id":"9007199254740993","next":"9007199254740994"}`, string(r.Value))
}
