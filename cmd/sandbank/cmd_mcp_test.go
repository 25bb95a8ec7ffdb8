package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/tenant"
)

// mcpCallBound bounds one tool call of the end-to-end tests. It is far
// above what a call takes (a compile of QuickJS under -race on a loaded
// machine included), and below mcpWallClock, so a run that was not
// stopped cannot be mistaken for one that was.
const mcpCallBound = 45 * time.Second

// mcpWarmBound bounds the server's start: building and warming every
// engine, which compiles QuickJS and starlark-wasm (minutes under -race on
// a loaded machine; seconds otherwise).
const mcpWarmBound = 8 * time.Minute

// mcpWallClock is the server's wall-clock limit in the end-to-end tests:
// longer than any bound a test waits, so only a cancellation or a call's
// own lower limit can end a runaway script in time.
const mcpWallClock = "90s"

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
// Every write signals wrote, so a reader waits for the next write rather
// than polling.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // capacity 1: a pending "something was written"
}

func (s *syncBuffer) signal() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == nil {
		s.wrote = make(chan struct{}, 1)
	}
	return s.wrote
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	wrote := s.signal()
	s.mu.Lock()
	n, err := s.b.Write(p)
	s.mu.Unlock()
	select {
	case wrote <- struct{}{}:
	default: // a signal is pending already
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the buffer matches re, checking after each write,
// or fails the test after bound.
func (s *syncBuffer) waitFor(t *testing.T, re *regexp.Regexp, bound time.Duration) string {
	t.Helper()
	wrote := s.signal()
	timeout := time.NewTimer(bound)
	defer timeout.Stop()
	for {
		// A write after this read leaves its signal in wrote: it is
		// never missed.
		if m := re.FindString(s.String()); m != "" {
			return m
		}
		select {
		case <-wrote:
		case <-timeout.C:
			t.Fatalf("no %q on the server's stderr within %s; it has:\n%s", re, bound, s.String())
			return ""
		}
	}
}

// mcpChild returns the command of the test binary acting as the real
// sandbank, running "sandbank mcp args...".
func mcpChild(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), realChildEnv+"=1")
	return cmd
}

func callTool(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) (*mcp.CallToolResult, mcpserver.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpCallBound)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err, "tool %s", params.Name)
	var r mcpserver.Result
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	return res, r
}

// TestMCPEndToEnd starts "sandbank mcp" as a process, as an MCP client
// does, and talks to it with the SDK's client over its standard input and
// output: the tools, a good script in each language, a failing script, a
// memory bomb, a runaway loop and a cancelled run, each answered correctly
// within mcpCallBound.
func TestMCPEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sandbank mcp with the real engines")
	}
	// The compiled modules are cached where the command keeps them by
	// default, as for a person running it: only the first run of the
	// tests on a machine compiles them.
	args := []string{"--timeout", mcpWallClock, "--memory", "32MiB"}
	// The languages are named, so that the tools do not depend on the
	// machine (python runs where its sandbox does; python_door_test.go
	// has its door).
	tools := []string{"list_engines", "run_javascript", "run_starlark", "run_typescript"}
	if !raceEnabled {
		args = append(args, "--lang", "javascript,starlark,typescript")
	} else {
		// starlark-wasm's guest takes minutes to compile under -race;
		// backends/starlarkwasm's own tests run it there.
		args = append(args, "--lang", "javascript,typescript")
		tools = []string{"list_engines", "run_javascript", "run_typescript"}
	}
	var stderr syncBuffer
	cmd := mcpChild(args...)
	cmd.Stderr = &stderr
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	progressed := make(chan struct{}, 64)
	client := mcp.NewClient(&mcp.Implementation{Name: "sandbank-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
			select {
			case progressed <- struct{}{}:
			default:
			}
		},
	})
	connectCtx, cancelConnect := context.WithTimeout(context.Background(), mcpCallBound)
	defer cancelConnect()
	cs, err := client.Connect(connectCtx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			_ = cs.Close()
		}
		if t.Failed() {
			t.Logf("the server's stderr:\n%s", stderr.String())
		}
	}()
	// Each call below is bounded by mcpCallBound; the engines' build is
	// not a call's.
	stderr.waitFor(t, regexp.MustCompile(`sandbank: engines warmed`), mcpWarmBound)
	// The session's own bound; each call has its own, mcpCallBound.
	ctx, cancel := context.WithTimeout(context.Background(), 10*mcpCallBound)
	defer cancel()

	t.Run("tools", func(t *testing.T) {
		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
			assert.NotEmpty(t, tool.Description, tool.Name)
			assert.NotNil(t, tool.InputSchema, tool.Name)
		}
		assert.Equal(t, tools, names)
	})

	t.Run("good scripts", func(t *testing.T) {
		for tool, script := range map[string]string{
			"run_javascript": `({ sum: input.a + input.b })`,
			"run_typescript": "const n: number = input.a + input.b;\n({ sum: n })",
			"run_starlark":   "def main(input):\n    return {\"sum\": input[\"a\"] + input[\"b\"]}\n",
		} {
			if !slices.Contains(tools, tool) {
				continue
			}
			res, r := callTool(t, cs, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"script": script, "input": map[string]int{"a": 1, "b": 2}}})
			assert.False(t, res.IsError, "%s: %+v", tool, r)
			assert.True(t, r.OK, tool)
			assert.Equal(t, `{"sum":3}`, string(r.Value), tool)
			// Each language's default engine, as at every door.
			reg, err := builtinRegistry()
			require.NoError(t, err)
			def, err := reg.Default(strings.TrimPrefix(tool, "run_"))
			require.NoError(t, err)
			assert.Equal(t, def.Engine, r.Engine, tool)
			require.NotNil(t, r.Receipt, tool)
			assert.Equal(t, record.AddressOf([]byte(script)), r.Receipt.Script, tool)
		}
	})

	t.Run("failing script", func(t *testing.T) {
		res, r := callTool(t, cs, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": `throw new TypeError("no rows in " + input.table)`, "input": map[string]string{"table": "orders"}}})
		assert.True(t, res.IsError)
		require.NotNil(t, r.Failure)
		assert.Equal(t, record.CodeScriptError, r.Failure.Code)
		assert.Equal(t, "TypeError", r.Failure.Name)
		assert.Equal(t, "no rows in orders", r.Failure.Message)
		assert.Contains(t, textOf(res), "The script failed: scriptError: TypeError: no rows in orders")
	})

	t.Run("memory bomb", func(t *testing.T) {
		bomb, err := os.ReadFile("../../fixtures/javascript/allocation_bomb.js")
		require.NoError(t, err)
		res, r := callTool(t, cs, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": string(bomb)}})
		assert.True(t, res.IsError)
		require.NotNil(t, r.Failure)
		assert.Equal(t, record.CodeLimitExceeded, r.Failure.Code)
		assert.Equal(t, record.LimitMemory, r.Failure.Kind)
	})

	t.Run("runaway loop", func(t *testing.T) {
		res, r := callTool(t, cs, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{
			"script": "for (;;) {}", "limits": map[string]any{"timeoutMs": 500},
		}})
		assert.True(t, res.IsError)
		require.NotNil(t, r.Failure)
		assert.Equal(t, record.CodeLimitExceeded, r.Failure.Code)
		assert.Equal(t, record.LimitWallClock, r.Failure.Kind)
		assert.Contains(t, r.Hint, "wall-clock limit of 500ms")
	})

	t.Run("cancelled run", func(t *testing.T) {
		callCtx, cancelCall := context.WithCancel(ctx)
		defer cancelCall()
		params := &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "for (;;) {}"}}
		params.SetProgressToken("cancel-me")
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(callCtx, params)
			done <- err
		}()
		// The first progress notification comes after a second of the run:
		// the script is running.
		select {
		case <-progressed:
		case <-time.After(mcpCallBound):
			t.Fatal("no progress notification for a run past a second")
		}
		cancelCall()
		assert.ErrorIs(t, <-done, context.Canceled)
		// The server says the run ended cancelled: well before the 90 s
		// wall clock, the only other way it could have ended.
		stderr.waitFor(t, regexp.MustCompile(`tool=run_javascript engine=quickjs outcome=canceled`), mcpCallBound)
		mu.Lock()
		assert.Equal(t, "cancel-me", progress[0].ProgressToken)
		mu.Unlock()

		// The server goes on answering.
		_, r := callTool(t, cs, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "input * 2", "input": 21}})
		assert.Equal(t, "42", string(r.Value))
	})

	closed = true
	require.NoError(t, cs.Close(), "the server exits 0 when its client closes standard input")
	assert.NotContains(t, stderr.String(), "outcome=infrastructure")
	assert.Contains(t, stderr.String(), "outcome=scriptError")
	assert.NotContains(t, stderr.String(), "no rows in", "the server's log never holds a script or its failure's text")
}

// bearer adds an API key to every request.
type bearer struct {
	key string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPOverHTTP serves "sandbank mcp --http 127.0.0.1:0" with tenants
// and runs scripts over streamable HTTP: a key is required, and each
// tenant's engines and limits ceiling apply.
func TestMCPOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sandbank mcp with the real engines")
	}
	acme, acmeDigest, err := tenant.NewKey()
	require.NoError(t, err)
	narrow, narrowDigest, err := tenant.NewKey()
	require.NoError(t, err)
	doc := filepath.Join(t.TempDir(), "tenants.json")
	require.NoError(t, os.WriteFile(doc, []byte(`{"tenants": [
		{"name": "acme", "keys": ["`+acmeDigest+`"], "limits": {"wallClock": "700ms"}},
		{"name": "narrow", "keys": ["`+narrowDigest+`"], "engines": ["starlark"]}]}`), 0o600))

	cmd := mcpChild("--http", "127.0.0.1:0", "--tenants", doc, "--lang", "javascript")
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			assert.Equal(t, exitSIGINT, exitCodeOf(err), "SIGINT ends the server")
		case <-time.After(mcpCallBound):
			_ = cmd.Process.Kill()
			t.Error("the server did not stop on SIGINT")
		}
	}()
	endpoint := make(chan string, 1)
	warmed := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "sandbank: serving MCP (streamable HTTP) on "); ok {
				endpoint <- url
			}
			if strings.Contains(sc.Text(), "sandbank: engines warmed") {
				close(warmed)
			}
		}
		_, _ = io.Copy(io.Discard, errPipe)
	}()
	var url string
	select {
	case url = <-endpoint:
	case <-time.After(mcpCallBound):
		t.Fatal("the server did not say where it serves")
	}
	select {
	case <-warmed:
	case <-time.After(mcpWarmBound):
		t.Fatal("the server did not warm its engines")
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpCallBound)
	defer cancel()
	connect := func(key string) (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "sandbank-test", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{key}}}
		return client.Connect(ctx, tr, nil)
	}

	for name, key := range map[string]string{"no key": "", "a wrong key": strings.Repeat("x", 40)} {
		_, err := connect(key)
		assert.Error(t, err, name)
	}

	cs, err := connect(acme)
	require.NoError(t, err)
	defer cs.Close()
	_, r := callTool(t, cs, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "input.map(x => x * x)", "input": []int{1, 2, 3}}})
	assert.Equal(t, "[1,4,9]", string(r.Value))
	require.NotNil(t, r.Receipt)
	assert.Equal(t, 700*time.Millisecond, r.Receipt.Limits.WallClock, "the tenant's ceiling")
	res, r := callTool(t, cs, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "1", "limits": map[string]any{"timeoutMs": 701}}})
	assert.True(t, res.IsError)
	assert.Contains(t, r.InvalidCall, "700 ms")

	ns, err := connect(narrow)
	require.NoError(t, err)
	defer ns.Close()
	res, r = callTool(t, ns, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "1"}})
	assert.True(t, res.IsError)
	assert.Contains(t, r.InvalidCall, "no allowed engine runs javascript", "the tenant's engines run no javascript")
}

func TestMCPTenantsNeedHTTP(t *testing.T) {
	res := runMain("", "mcp", "--tenants", "tenants.json")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "--tenants is for --http")
	// Off loopback, a tenants document is what the server needs: the
	// document is read (and here refused), not the address.
	bad := filepath.Join(t.TempDir(), "tenants.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"tenants": [{"name": "x", "keys": ["nope"]}]}`), 0o600))
	res = runMain("", "mcp", "--http", "0.0.0.0:0", "--tenants", bad)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "--tenants:")
	assert.NotContains(t, res.stderr, "loopback")
}

func TestMCPRefusesAnAddressOffLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8765", ":8765", "192.0.2.1:80", "[::]:8765", "example.com:80"} {
		res := runMain("", "mcp", "--http", addr)
		assert.Equal(t, exitUsage, res.code, addr)
		assert.Contains(t, res.stderr, "is not a loopback address", addr)
		assert.Contains(t, res.stderr, "API keys", addr)
	}
	assert.NoError(t, checkLoopback("127.0.0.1:0"))
	assert.NoError(t, checkLoopback("[::1]:8765"))
	res := runMain("", "mcp", "--http", "nonsense")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "want HOST:PORT")
}

func TestMCPRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "0s"}, "--timeout"},
		{[]string{"--memory", "lots"}, "--memory"},
		{[]string{"--lang", "cobol"}, `language "cobol" has no tool`},
		{[]string{"--engine", "nope"}, `unknown engine "nope"`},
		{[]string{"--engine", "extism"}, "engine extism is chosen for wasm, which is not served"},
		{[]string{"--engine", "goja", "--engine", "quickjs"}, "both goja and quickjs run javascript"},
	} {
		res := runMain("", append([]string{"mcp"}, c.args...)...)
		assert.Equal(t, exitUsage, res.code, c.args)
		assert.Contains(t, res.stderr, c.want, c.args)
	}
}

// textOf returns the text content of a tool result.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// exitCodeOf returns a finished process's exit code.
func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func TestMCPAnswersABadLineAndGoesOn(t *testing.T) {
	// Each line of standard input in turn; the last request is followed
	// at once by the end of the input.
	stdin := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`not json`,
		`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`,
		`42`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n"
	res := runMain(stdin, "mcp", "--quiet", "--no-cache", "--lang", "starlark", "--engine", "starlark")
	require.Equal(t, 0, res.code, "the session ends with its input: %s", res.stderr)
	type reply struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	var got []reply
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var r reply
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		got = append(got, r)
	}
	// The replies come in the order they are ready, not that of the
	// lines: a bad line is answered at once.
	var errs []string
	var answered []string
	for _, r := range got {
		if r.Error != nil {
			errs = append(errs, fmt.Sprintf("%s %d", r.ID, r.Error.Code))
			continue
		}
		answered = append(answered, string(r.ID))
		if string(r.ID) == "3" {
			assert.Contains(t, string(r.Result), "run_starlark")
		}
	}
	assert.ElementsMatch(t, []string{"null -32700", "1 -32600", "null -32600", "null -32600", "null -32600"}, errs, res.stdout)
	assert.ElementsMatch(t, []string{"0", "3"}, answered, "initialize, and the request the input ended with: %s", res.stdout)
}

func TestMCPAllowOriginIsForHTTP(t *testing.T) {
	res := runMain("", "mcp", "--allow-origin", "https://app.example.com")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "--allow-origin is for --http")
	res = runMain("", "mcp", "--http", "127.0.0.1:0", "--allow-origin", "app.example.com")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "want SCHEME://HOST[:PORT]")
}
