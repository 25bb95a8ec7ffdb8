package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/codemode"

	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// upstreamSecret is a credential the upstream holds: it must never reach
// a script.
const upstreamSecret = "sk-upstream-0123456789"

// malformedMarker in a tool's answer makes markMalformed replace the
// answer with one that is not a tool result.
const malformedMarker = "MALFORMED-ANSWER"

// upstream is a real MCP server, built with the SDK, whose tools the
// tests' scripts call.
type upstream struct {
	srv *mcp.Server
	// hangStarted and hangCancelled receive one value each time the hang
	// tool starts, and when its context is cancelled.
	hangStarted, hangCancelled chan struct{}

	mu   sync.Mutex
	conn mcp.Connection // the server's side of the connection, which die closes
}

// wrap returns the server's transport, keeping its connection for die.
func (u *upstream) wrap(t mcp.Transport) mcp.Transport { return keepConn{t, u} }

type keepConn struct {
	mcp.Transport
	u *upstream
}

func (k keepConn) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	k.u.mu.Lock()
	k.u.conn = c
	k.u.mu.Unlock()
	return c, err
}

type itemIn struct {
	ID int `json:"id" jsonschema:"the item's id"`
}

type itemOut struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

func newUpstream() *upstream {
	u := &upstream{hangStarted: make(chan struct{}, 16), hangCancelled: make(chan struct{}, 16)}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "item", Description: "Look an item up by id."}, func(_ context.Context, _ *mcp.CallToolRequest, in itemIn) (*mcp.CallToolResult, itemOut, error) {
		return nil, itemOut{ID: in.ID, Name: fmt.Sprintf("item-%d", in.ID)}, nil
	})
	text := func(name, desc string, answer func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}, answer)
	}
	text("echo-text", "Echo the argument as text.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	text("hang", "Never answer.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.hangStarted <- struct{}{}
		<-ctx.Done()
		u.hangCancelled <- struct{}{}
		return nil, ctx.Err()
	})
	text("refuse", "Refuse every call with a JSON-RPC error.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "query is required"}
	})
	text("die", "Die: the connection closes, as when the process exits.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.mu.Lock()
		conn := u.conn
		u.mu.Unlock()
		_ = conn.Close()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	text("big", "Answer 4000 bytes.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 4000)}}}, nil
	})
	text("garbage", "Answer something that is not a tool result.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: malformedMarker}}}, nil
	})
	text("fail", "Report an error that names the upstream's credential.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "denied for token " + upstreamSecret + "\x00\nsee logs"}}}, nil
	})
	text("leak", "Answer the upstream's credential.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"token": upstreamSecret, upstreamSecret: "key"}}, nil
	})
	u.srv = s
	return u
}

// markMalformed wraps a client transport: an answer carrying
// malformedMarker becomes content of an unknown type.
type markMalformed struct{ mcp.Transport }

func (m markMalformed) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := m.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return malformedConn{c}, nil
}

type malformedConn struct{ mcp.Connection }

func (c malformedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && strings.Contains(string(r.Result), malformedMarker) {
		r.Result = json.RawMessage(`{"content":[{"type":"no-such-type"}]}`)
	}
	return msg, err
}

// connect returns a client session with u's server over an in-memory
// transport.
func (u *upstream) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := u.srv.Connect(ctx, u.wrap(st), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandbank", Version: "1"}, nil).Connect(ctx, markMalformed{ct}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// gojaRegistry is a registry of goja, an engine that declares host calls.
func gojaRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	probe, err := goja.New(nil)
	require.NoError(t, err)
	reg := registry.New()
	reg.Register(registry.Entry{
		Engine: "goja", Language: "javascript", Capabilities: probe.Capabilities(),
		Factory: func() (spi.Backend, error) { return goja.New(nil) },
	})
	return reg
}

// codeMode serves goja with the upstream "up" and returns a client of the
// server.
func codeMode(t *testing.T, u *upstream, uopts *codemode.UpstreamOptions, opts *mcpserver.Options) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	up, err := codemode.NewUpstream(ctx, "up", u.connect(t), uopts)
	require.NoError(t, err)
	return codeModeOf(t, up, opts)
}

// codeModeOf serves goja, starlark and goja-ts with the upstream up and
// returns a client of the server.
func codeModeOf(t *testing.T, up *codemode.Upstream, opts *mcpserver.Options) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if opts == nil {
		opts = &mcpserver.Options{}
	}
	opts.Host = hostOf(t, up)
	if opts.Limits.WallClock == 0 {
		opts.Limits.WallClock = 2 * testTimeout // only a call's own limit ends a run in time
	}
	reg := gojaRegistry(t)
	probe, err := starlark.New(nil)
	require.NoError(t, err)
	reg.Register(registry.Entry{
		Engine: "starlark", Language: "starlark", Capabilities: probe.Capabilities(),
		Factory: func() (spi.Backend, error) { return starlark.New(nil) },
	})
	tsFactory := func() (spi.Backend, error) {
		js, err := goja.New(nil)
		if err != nil {
			return nil, err
		}
		return typescript.Wrap(js, nil)
	}
	ts, err := tsFactory()
	require.NoError(t, err)
	reg.Register(registry.Entry{Engine: "goja-ts", Language: "typescript", Capabilities: ts.Capabilities(), Factory: tsFactory})
	if c, ok := ts.(interface{ Close() error }); ok {
		require.NoError(t, c.Close())
	}
	if opts.Engines == nil {
		opts.Engines = map[string]string{"starlark": "starlark", "typescript": "goja-ts"}
	}
	srv, err := mcpserver.New(reg, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// runJS runs script through run_javascript and returns the result.
func runJS(t *testing.T, cs *mcp.ClientSession, script string, limits map[string]any) mcpserver.Result {
	t.Helper()
	return runTool(t, cs, "run_javascript", script, limits)
}

// runTool runs script through a run tool and returns the result.
func runTool(t *testing.T, cs *mcp.ClientSession, tool, script string, limits map[string]any) mcpserver.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	args := map[string]any{"script": script}
	if limits != nil {
		args["limits"] = limits
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	var r mcpserver.Result
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	return r
}

// caught is a script that calls host.up__TOOL(arg) and returns the
// message of what it threw, or "no error".
func caught(tool, arg string) string {
	return `let m = "no error";
try { await host.up__` + tool + `(` + arg + `); } catch (e) { m = e.message; }
m`
}

func TestUpstreamTenCallsReshaped(t *testing.T) {
	cs := codeMode(t, newUpstream(), nil, nil)
	r := runJS(t, cs, `const items = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(id => host.up__item({ id })));
({ names: items.map(i => i.name).join(","), total: items.reduce((s, i) => s + i.id, 0) })`, nil)
	require.True(t, r.OK, "%+v", r)
	assert.JSONEq(t, `{"names":"item-1,item-2,item-3,item-4,item-5,item-6,item-7,item-8,item-9,item-10","total":55}`, string(r.Value))
	require.NotNil(t, r.Stats)
	assert.EqualValues(t, 10, r.Stats.HostCalls, "the record counts every upstream call")
	assert.Positive(t, r.Stats.HostCallBytesIn)
	assert.Positive(t, r.Stats.HostCallBytesOut)
	require.Len(t, r.HostCalls, 10, "the record lists every upstream call")
	for i, c := range r.HostCalls {
		assert.Equal(t, "up__item", c.Name, "call %d", i)
		assert.Equal(t, record.HostCallOK, c.Outcome, "call %d", i)
		assert.Positive(t, c.BytesIn, "call %d", i)
		if i > 0 {
			assert.GreaterOrEqual(t, c.Issued, r.HostCalls[i-1].Issued, "in the order issued")
		}
	}
}

func TestUpstreamTextAnswerAndArguments(t *testing.T) {
	cs := codeMode(t, newUpstream(), nil, nil)
	r := runJS(t, cs, `[await host.up__echo_text({ a: 1 }), await host.up__echo_text(), await host.up__echo_text(null)]`, nil)
	require.True(t, r.OK, "%+v", r)
	assert.JSONEq(t, `["{\"a\":1}","{}","{}"]`, string(r.Value))

	r = runJS(t, cs, caught("echo_text", "[1, 2]"), nil)
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, `"mcpserver: upstreamInvalidArguments: up.echo-text: the argument must be a JSON object"`, string(r.Value))
}

// Each failure of an upstream is an error the script catches, with its
// code; the run goes on.
func TestUpstreamFailuresAreCaught(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		uopts        *codemode.UpstreamOptions
		want         string // the message, or its start when it ends with ": "
	}{
		{"hangs", caught("hang", "{}"), &codemode.UpstreamOptions{CallTimeout: 50 * time.Millisecond}, "mcpserver: upstreamTimeout: up.hang: the upstream did not answer in time"},
		{"too large", caught("big", "{}"), nil, "effect: host function result is 4002 bytes, over the limit of 1024 (MaxHostResultBytes)"},
		{"malformed", caught("garbage", "{}"), nil, "mcpserver: upstreamMalformed: up.garbage: the upstream's answer is not a tool result"},
		{"refused", caught("refuse", "{}"), nil, "mcpserver: upstreamRefused: up.refuse: the upstream refused the call: query is required"},
		{"invalid arguments", caught("item", `{ id: "seven" }`), nil, "mcpserver: upstreamToolError: up.item: the tool reported an error: "},
		{"dies", caught("die", "{}"), nil, "mcpserver: upstreamUnavailable: up.die: the upstream is not available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream()
			cs := codeMode(t, u, tc.uopts, &mcpserver.Options{MaxHostResultBytes: 1024})
			r := runJS(t, cs, tc.script, nil)
			require.True(t, r.OK, "%+v", r)
			var msg string
			require.NoError(t, json.Unmarshal(r.Value, &msg))
			if strings.HasSuffix(tc.want, ": ") {
				assert.True(t, strings.HasPrefix(msg, tc.want), msg)
			} else {
				assert.Equal(t, tc.want, msg)
			}
			switch tc.name {
			case "hangs":
				waitSignal(t, u.hangCancelled, "the upstream hears the call is cancelled")
			case "dies":
				// Gone stays gone: the next call fails at once, typed.
				r := runJS(t, cs, caught("item", "{ id: 1 }"), nil)
				assert.Equal(t, `"mcpserver: upstreamUnavailable: up.item: the upstream is not available"`, string(r.Value))
			}
		})
	}
}

// A run that ends while an upstream call is in flight cancels the call.
func TestUpstreamCallCancelledWithTheRun(t *testing.T) {
	u := newUpstream()
	cs := codeMode(t, u, nil, nil) // the call timeout (30 s) is far above the run's 300 ms
	r := runJS(t, cs, `await host.up__hang({})`, map[string]any{"timeoutMs": 300})
	require.False(t, r.OK)
	require.NotNil(t, r.Failure)
	assert.Equal(t, record.CodeLimitExceeded, r.Failure.Code)
	assert.Equal(t, record.LimitWallClock, r.Failure.Kind)
	waitSignal(t, u.hangCancelled, "the upstream hears the call is cancelled")
}

// The upstream's credentials never reach the script: not in a tool's
// error text, not in its answer.
func TestUpstreamCredentialsRedacted(t *testing.T) {
	cs := codeMode(t, newUpstream(), &codemode.UpstreamOptions{Redact: []string{upstreamSecret, ""}}, nil)
	r := runJS(t, cs, `let m = "no error";
try { await host.up__fail({}); } catch (e) { m = e.message; }
[m, await host.up__leak({})]`, nil)
	require.True(t, r.OK, "%+v", r)
	assert.NotContains(t, string(r.Value), upstreamSecret)
	var got []any
	require.NoError(t, json.Unmarshal(r.Value, &got))
	require.Len(t, got, 2)
	assert.Equal(t, "mcpserver: upstreamToolError: up.fail: the tool reported an error: denied for token [redacted]\ufffd\nsee logs", got[0])
	assert.Equal(t, map[string]any{"[redacted]": "key", "token": "[redacted]"}, got[1])
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting: %s", what)
	}
}

// A text shorter than MinRedactBytes is not redacted: it is no
// credential, and redacting it would mangle the answers.
func TestUpstreamShortRedactIgnored(t *testing.T) {
	cs := codeMode(t, newUpstream(), &codemode.UpstreamOptions{Redact: []string{"1", "item"}}, nil)
	r := runJS(t, cs, `(await host.up__item({ id: 1 })).name`, nil)
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, `"item-1"`, string(r.Value))
}

// One spelling in every language: Starlark calls the same host names.
func TestUpstreamFromStarlark(t *testing.T) {
	cs := codeMode(t, newUpstream(), nil, nil)
	r := runTool(t, cs, "run_starlark", `def main(input):
    names = [host.up__item({"id": i})["name"] for i in range(1, 4)]
    ok, err = host_try("up__hang_nothing", {})
    return {"names": names, "caught": err}
`, nil)
	require.True(t, r.OK, "%+v", r)
	assert.JSONEq(t, `{"names":["item-1","item-2","item-3"],"caught":"effect: unknown host function \"up__hang_nothing\""}`, string(r.Value))
	assert.EqualValues(t, 3, r.Stats.HostCalls, "an unknown name is refused, not delivered")
}

// The server's MaxHostCalls bounds the upstream calls of a run: the call
// past it ends the run, limitExceeded (hostCalls).
func TestUpstreamCallsCounted(t *testing.T) {
	cs := codeMode(t, newUpstream(), nil, &mcpserver.Options{MaxHostCalls: 3})
	r := runJS(t, cs, `await Promise.all([1, 2, 3, 4, 5].map(id => host.up__item({ id })))`, nil)
	require.False(t, r.OK)
	require.NotNil(t, r.Failure)
	assert.Equal(t, record.CodeLimitExceeded, r.Failure.Code)
	assert.Equal(t, record.LimitHostCalls, r.Failure.Kind)
}

// One spelling in every language: TypeScript awaits the same host names,
// and its tool's description declares them.
func TestUpstreamFromTypeScript(t *testing.T) {
	cs := codeMode(t, newUpstream(), nil, nil)
	r := runTool(t, cs, "run_typescript", `type Item = { id: number; name: string };
const items: Item[] = await Promise.all([4, 5].map((id: number) => host.up__item({ id })));
items.map((i: Item) => i.name)`, nil)
	require.True(t, r.OK, "%+v", r)
	assert.JSONEq(t, `["item-4","item-5"]`, string(r.Value))
	assert.EqualValues(t, 2, r.Stats.HostCalls)
}
