package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/codemode"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// upstreamChildEnv makes the test binary an upstream MCP server over its
// standard input and output (see init): what 'sandbank mcp --upstream
// NAME=COMMAND' starts.
const upstreamChildEnv = "SANDBANK_TEST_UPSTREAM_CHILD"

// upstreamStartsEnv names a file the upstream child appends a line to
// each time it starts.
const upstreamStartsEnv = "SANDBANK_TEST_UPSTREAM_STARTS"

// upstreamBound bounds each step of these tests: far above what one
// takes on a loaded machine, so that only a hang reaches it.
const upstreamBound = 60 * time.Second

func init() {
	if os.Getenv(upstreamChildEnv) != "1" {
		return
	}
	// Before TestMain: this process is the upstream, nothing else.
	if name := os.Getenv(upstreamStartsEnv); name != "" {
		f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			os.Exit(1)
		}
		_, _ = f.WriteString("start\n")
		_ = f.Close()
	}
	err := testUpstream().Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "closed") {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type itemArgs struct {
	ID int `json:"id"`
}

type itemAnswer struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

// upstreamNote is what the upstream's note answers: lines holding an
// answer of the python runner's old line protocol.
const upstreamNote = "x\n{\"i\":1,\"ok\":true}\n"

// testUpstream is a real MCP server, built with the SDK: item answers,
// note answers upstreamNote, die exits the process, hang never answers,
// big answers 5 MiB, huge answers past codemode.MaxUpstreamMessageBytes,
// whoami answers the Authorization header it was sent.
func testUpstream() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "item", Description: "An item by id."}, func(_ context.Context, _ *mcp.CallToolRequest, in itemArgs) (*mcp.CallToolResult, itemAnswer, error) {
		return nil, itemAnswer{ID: in.ID, Title: fmt.Sprintf("item %d", in.ID)}, nil
	})
	raw := func(name string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
	}
	raw("note", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: upstreamNote}}}, nil
	})
	raw("die", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	raw("hang", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	raw("big", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 5<<20)}}}, nil
	})
	raw("huge", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", codemode.MaxUpstreamMessageBytes)}}}, nil
	})
	raw("whoami", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var auth string
		if req.Extra != nil {
			auth = req.Extra.Header.Get("Authorization")
		}
		token := strings.TrimPrefix(auth, "Bearer ")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + auth + ", token " + token}}}, nil
	})
	return s
}

// gojaApp is the command with goja as its only engine, its standard
// input and output the returned client transport's.
func gojaApp(t *testing.T) (*app, mcp.Transport, *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	a := &app{
		stdin: inR, stdout: outW, stderr: stderr,
		newRegistry: func() (*registry.Registry, error) {
			probe, err := goja.New(nil)
			if err != nil {
				return nil, err
			}
			r := new(registry.Registry)
			r.Register(registry.Entry{Engine: "goja", Language: "javascript", Capabilities: probe.Capabilities(),
				Factory: func() (spi.Backend, error) { return goja.New(nil) }})
			return r, nil
		},
		fixtures: func(string) (*fixtures.Set, bool) { return nil, false },
	}
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
	return a, &mcp.IOTransport{Reader: outR, Writer: inW}, stderr
}

// serveUpstreams runs 'sandbank mcp args...' in this process and returns a
// client session with it; the command's exit code arrives on the channel
// once the session is closed.
func serveUpstreams(t *testing.T, args ...string) (*mcp.ClientSession, <-chan int) {
	t.Helper()
	a, transport, stderr := gojaApp(t)
	code := make(chan int, 1)
	go func() {
		code <- a.execute(append([]string{"mcp", "--lang", "javascript", "--timeout", "90s"}, args...))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), upstreamBound)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, transport, nil)
	require.NoError(t, err, "the server's stderr: %s", stderr.String())
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("the server's stderr:\n%s", stderr.String())
		}
	})
	return cs, code
}

// runScript runs a JavaScript script through run_javascript.
func runScript(t *testing.T, cs *mcp.ClientSession, script string) mcpserver.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), upstreamBound)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": script}})
	require.NoError(t, err)
	var r mcpserver.Result
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	return r
}

// tenItems calls ten tools of upstream NAME at once and reshapes their
// answers.
func tenItems(name string) string {
	return `const items = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(id => host.` + name + `__item({ id })));
({ titles: items.map(i => i.title), sum: items.reduce((s, i) => s + i.id, 0) })`
}

const tenItemsValue = `{"sum":55,"titles":["item 1","item 2","item 3","item 4","item 5","item 6","item 7","item 8","item 9","item 10"]}`

// caughtMessage calls host.CALL and returns the message it threw.
func caughtMessage(call string) string {
	return `let m = "no error"; try { await host.` + call + `; } catch (e) { m = e.message; } m`
}

// TestMCPUpstreamStdio: 'sandbank mcp --upstream NAME=COMMAND' starts a
// real MCP server as a process; a script calls ten of its tools at once
// and reshapes their answers, and the run's record counts ten calls. Then
// each failure of the upstream is a typed error the script catches.
func TestMCPUpstreamStdio(t *testing.T) {
	store := []string{"--upstream", "store='" + os.Args[0] + "'", "--upstream-env", "store=" + upstreamChildEnv + "=1"}
	cs, code := serveUpstreams(t, store...)

	ctx, cancel := context.WithTimeout(context.Background(), upstreamBound)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var desc string
	for _, tool := range tools.Tools {
		if tool.Name == "run_javascript" {
			desc = tool.Description
		}
	}
	assert.Contains(t, desc, "function store__item(args: {\n    id: number;\n  }): Promise<{ id: number; title: string }>;")
	assert.Contains(t, desc, "function store__hang(")

	r := runScript(t, cs, tenItems("store"))
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, tenItemsValue, string(r.Value))
	require.NotNil(t, r.Stats)
	assert.EqualValues(t, 10, r.Stats.HostCalls)

	t.Run("hangs", func(t *testing.T) {
		// A server of its own, whose calls time out far below the run's
		// wall clock (90 s).
		cs, _ := serveUpstreams(t, append(store, "--upstream-timeout", "100ms")...)
		r := runScript(t, cs, caughtMessage("store__hang({})"))
		assert.Equal(t, `"mcpserver: upstreamTimeout: store.hang: the upstream did not answer in time"`, string(r.Value))
	})
	t.Run("too large", func(t *testing.T) {
		r := runScript(t, cs, caughtMessage("store__big({})"))
		assert.Equal(t, `"effect: host function result is 5242882 bytes, over the limit of 4194304 (MaxHostResultBytes)"`, string(r.Value))
	})
	t.Run("over the bound", func(t *testing.T) {
		r := runScript(t, cs, caughtMessage("store__huge({})"))
		assert.Equal(t, `"mcpserver: upstreamTooLarge: store.huge: the upstream's answer is over the bound on an upstream message (MaxUpstreamMessageBytes)"`, string(r.Value))
		r = runScript(t, cs, `(await host.store__item({ id: 6 })).title`)
		require.True(t, r.OK, "%+v", r)
		assert.Equal(t, `"item 6"`, string(r.Value))
	})
	t.Run("dies and is started again", func(t *testing.T) {
		// The process exits on the call: that call fails typed, and the
		// next run's call starts the upstream again.
		r := runScript(t, cs, caughtMessage("store__die({})"))
		assert.Equal(t, `"mcpserver: upstreamUnavailable: store.die: the upstream is not available"`, string(r.Value))
		r = runScript(t, cs, `(await host.store__item({ id: 7 })).title`)
		require.True(t, r.OK, "%+v", r)
		assert.Equal(t, `"item 7"`, string(r.Value))
	})

	require.NoError(t, cs.Close())
	select {
	case c := <-code:
		assert.Equal(t, exitOK, c)
	case <-time.After(upstreamBound):
		t.Fatal("sandbank mcp did not end with its client")
	}
}

// TestMCPUpstreamRestartIsBounded: an upstream that dies on every call
// gives every call a typed error, and is not started once per call: the
// restart backoff (codemode.MinUpstreamRestartDelay, doubling) leaves
// far fewer starts than calls. The bound, half the calls, holds unless
// the thirty calls take over a minute: at most ten starts fit in 30 s.
func TestMCPUpstreamRestartIsBounded(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	cs, _ := serveUpstreams(t, "--upstream", "store='"+os.Args[0]+"'", "--upstream-env", "store="+upstreamChildEnv+"=1",
		"--upstream-env", "store="+upstreamStartsEnv+"="+starts)
	const calls = 30
	r := runScript(t, cs, `const m = [];
for (let i = 0; i < `+strconv.Itoa(calls)+`; i++) {
  try { await host.store__die({}); m.push("no error"); } catch (e) { m.push(e.message); }
}
m`)
	require.True(t, r.OK, "%+v", r)
	var msgs []string
	require.NoError(t, json.Unmarshal(r.Value, &msgs))
	require.Len(t, msgs, calls)
	for _, m := range msgs {
		assert.Equal(t, "mcpserver: upstreamUnavailable: store.die: the upstream is not available", m)
	}
	b, err := os.ReadFile(starts)
	require.NoError(t, err)
	n := strings.Count(string(b), "start\n")
	assert.GreaterOrEqual(t, n, 1)
	assert.LessOrEqual(t, n, calls/2, "started %d times for %d calls", n, calls)
}

// TestMCPUpstreamHTTP: --upstream NAME=URL reaches a real MCP server over
// streamable HTTP with the operator's header, which never reaches the
// script; an answer that is not MCP, or one past the bound, is a typed
// error.
func TestMCPUpstreamHTTP(t *testing.T) {
	const secret = "ghp_0123456789secret"
	t.Setenv("SANDBANK_TEST_UPSTREAM_TOKEN", secret)
	srv := testUpstream()
	// The handler and its sessions; a new one forgets them, as a
	// restarted server does.
	var h atomic.Pointer[mcp.StreamableHTTPHandler]
	h.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "no token "+secret, http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"garbage"`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("this is not JSON-RPC"))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.Load().ServeHTTP(w, r)
	}))
	defer ts.Close()

	cs, _ := serveUpstreams(t, "--upstream", "web="+ts.URL, "--upstream-header", "web=Authorization: Bearer ${SANDBANK_TEST_UPSTREAM_TOKEN}")
	r := runScript(t, cs, tenItems("web"))
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, tenItemsValue, string(r.Value))
	assert.EqualValues(t, 10, r.Stats.HostCalls)

	r = runScript(t, cs, `await host.web__whoami({})`)
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, `"you are [redacted], token [redacted]"`, string(r.Value))

	// The upstream forgets its sessions: the call that finds its session
	// lost fails typed, and the next one starts a new session.
	h.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	r = runScript(t, cs, caughtMessage("web__item({ id: 1 })"))
	assert.Equal(t, `"mcpserver: upstreamUnavailable: web.item: the upstream is not available"`, string(r.Value))
	r = runScript(t, cs, `(await host.web__item({ id: 2 })).title`)
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, `"item 2"`, string(r.Value))

	// An answer past codemode.MaxUpstreamMessageBytes is not read past
	// it: a typed failure, and the next call gets a new session.
	r = runScript(t, cs, caughtMessage("web__huge({})"))
	assert.Equal(t, `"mcpserver: upstreamTooLarge: web.huge: the upstream's answer is over the bound on an upstream message (MaxUpstreamMessageBytes)"`, string(r.Value))
	r = runScript(t, cs, `(await host.web__item({ id: 5 })).title`)
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, `"item 5"`, string(r.Value))

	// The test server answers a call whose arguments say "garbage" with
	// something that is not JSON-RPC.
	r = runScript(t, cs, caughtMessage("web__whoami({ garbage: 1 })"))
	assert.Equal(t, `"mcpserver: upstreamMalformed: web.whoami: the upstream's answer is not a tool result"`, string(r.Value))

	// The upstream dies: its address no longer answers.
	ts.CloseClientConnections()
	ts.Close()
	r = runScript(t, cs, caughtMessage("web__item({ id: 1 })"))
	assert.Equal(t, `"mcpserver: upstreamUnavailable: web.item: the upstream is not available"`, string(r.Value))
}

func TestMCPUpstreamFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "gh=https://example.com/mcp"}, "is neither on loopback nor allowed"},
		{[]string{"--upstream", "gh"}, "want NAME=COMMAND or NAME=https://ADDRESS"},
		{[]string{"--upstream", "a=x", "--upstream", "a=y"}, "two upstreams are named"},
		{[]string{"--upstream", "a=x", "--upstream-env", "b=K=V"}, "no --upstream is named"},
		{[]string{"--upstream", "a=x", "--upstream-header", "a=Authorization: x"}, "is a command, not an address"},
		{[]string{"--upstream", "a=http://127.0.0.1:1/", "--upstream-env", "a=K=V"}, "is an address, not a command"},
		{[]string{"--upstream", "a='unclosed"}, "an unclosed quote"},
		{[]string{"--upstream-allow", "https://example.com"}, "--upstream-allow is for an --upstream"},
		{[]string{"--upstream", "a__b=x"}, "invalid upstream"},
		{[]string{"--upstream", "a=https://upstream.invalid/mcp", "--upstream-allow", "https://upstream.invalid"}, "sandbank: upstream a: connecting"},
		{[]string{"--upstream", "a=x", "--upstream-timeout", "soon"}, "--upstream-timeout: invalid duration"},
	} {
		a, _, stderr := gojaApp(t)
		a.stdin = strings.NewReader("")
		code := a.execute(append([]string{"mcp", "--quiet"}, tc.args...))
		want := exitUsage
		if strings.HasPrefix(tc.want, "sandbank: upstream") {
			want = exitUntyped // allowed, but nobody answers there: retryable
		}
		assert.Equal(t, want, code, "%v: %s", tc.args, stderr.String())
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
}

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		"server --flag":                  {"server", "--flag"},
		"  a\tb  ":                       {"a", "b"},
		`'/path with space/srv' "x y" z`: {"/path with space/srv", "x y", "z"},
		`a''b ""`:                        {"ab", ""},
	} {
		got, err := splitCommand(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "   ", `"open`} {
		_, err := splitCommand(bad)
		assert.Error(t, err, bad)
	}
}
