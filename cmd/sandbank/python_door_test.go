package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/tenant"
)

// pythonScript is a notebook-style cell: its last expression is the result.
const pythonScript = "import statistics\nprint('mean')\n{\"mean\": statistics.mean(input[\"xs\"]), \"big\": 2 ** 70}\n"

const pythonWant = `{"mean": 2.5, "big": 1180591620717411303424}`

// skipWithoutPython skips a test where this machine cannot run the
// Python sandbox, saying why.
func skipWithoutPython(t *testing.T) {
	t.Helper()
	if err := python.Available(nil); err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
	if _, err := python.New(nil); err != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", err)
	}
}

// TestPythonThroughEveryDoor runs one Python script through the command
// line (a .py file), the MCP tool run_python and the HTTP door's language
// "python", each on the built-in registry: the engine is found through
// builtin and package pool alone, as "python", the language's default.
// (The Temporal door resolves through the same pool in its own module.)
func TestPythonThroughEveryDoor(t *testing.T) {
	skipWithoutPython(t)
	reg := &registry.Registry{}
	builtin.Register(reg)

	t.Run("cli", func(t *testing.T) {
		a, _ := fakeApp(t)
		a.newRegistry = func() (*registry.Registry, error) { return reg, nil }
		path := filepath.Join(t.TempDir(), "cell.py")
		require.NoError(t, os.WriteFile(path, []byte(pythonScript), 0o600))
		res := cli(a, "", "run", "--json", "--no-cache", "--input", `{"xs":[1,2,3,4]}`, path)
		require.Equal(t, exitOK, res.code, res.stderr)
		var out struct {
			Value   json.RawMessage `json:"value"`
			Receipt record.Receipt  `json:"receipt"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		assert.JSONEq(t, pythonWant, string(out.Value))
		assert.Equal(t, "python", out.Receipt.Engine)
	})

	t.Run("mcp", func(t *testing.T) {
		srv, err := mcpserver.New(reg, &mcpserver.Options{Languages: []string{"python"}})
		require.NoError(t, err)
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(ctx, st, nil)
		require.NoError(t, err)
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
		require.NoError(t, err)
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
			"script": pythonScript, "input": map[string]any{"xs": []int{1, 2, 3, 4}},
		}})
		require.NoError(t, err)
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var r mcpserver.Result
		require.NoError(t, json.Unmarshal(b, &r))
		require.True(t, r.OK, "%s", b)
		assert.JSONEq(t, pythonWant, string(r.Value))
		assert.Equal(t, "python", r.Engine)
	})

	t.Run("http", func(t *testing.T) {
		key, digest, err := tenant.NewKey()
		require.NoError(t, err)
		set, err := tenant.Parse([]byte(`{"tenants":[{"name":"t","keys":["` + digest + `"]}]}`))
		require.NoError(t, err)
		srv, err := server.New(reg, &server.Options{Tenants: set})
		require.NoError(t, err)
		defer srv.Close()
		body, err := json.Marshal(map[string]any{"language": "python", "source": pythonScript, "input": map[string]any{"xs": []int{1, 2, 3, 4}}})
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodPost, "/v1/runs", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var rec effect.Record
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &rec))
		assert.JSONEq(t, pythonWant, string(rec.Value))
		assert.Equal(t, "python", rec.Receipt.Engine)
	})
}

// TestPythonHostFileEndingInANewline: `sandbank run --host f=FILE` on
// python with files ending in a newline, as most files do, one of them
// spread over lines and holding text of the runner's old line protocol:
// each answer arrives whole, to its own call (the approval reads false).
func TestPythonHostFileEndingInANewline(t *testing.T) {
	skipWithoutPython(t)
	reg := &registry.Registry{}
	builtin.Register(reg)
	a, _ := fakeApp(t)
	a.newRegistry = func() (*registry.Registry, error) { return reg, nil }
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.json")
	approve := filepath.Join(dir, "approve.json")
	script := filepath.Join(dir, "cell.py")
	require.NoError(t, os.WriteFile(doc, []byte("{\n  \"note\": \"x\\n{\\\"i\\\":1,\\\"ok\\\":true}\\n\",\n  \"n\": [1, 2]\n}\n"), 0o600))
	require.NoError(t, os.WriteFile(approve, []byte("false\n"), 0o600))
	require.NoError(t, os.WriteFile(script, []byte("[host.doc(), host.approve()]\n"), 0o600))
	res := cli(a, "", "run", "--json", "--no-cache", "--host", "doc="+doc, "--host", "approve="+approve, script)
	require.Equal(t, exitOK, res.code, res.stderr)
	var out struct {
		Value json.RawMessage `json:"value"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
	assert.JSONEq(t, `[{"note":"x\n{\"i\":1,\"ok\":true}\n","n":[1,2]},false]`, string(out.Value))
}

// TestPythonUpstreamAnswersThroughMCP: through `sandbank mcp` on python,
// an upstream's answers reach run_python's script whole, each to its own
// call, one at a time and in flight at once.
func TestPythonUpstreamAnswersThroughMCP(t *testing.T) {
	skipWithoutPython(t)
	a, transport, stderr := gojaApp(t)
	a.newRegistry = func() (*registry.Registry, error) {
		reg := &registry.Registry{}
		builtin.Register(reg)
		return reg, nil
	}
	go func() {
		_ = a.execute([]string{"mcp", "--lang", "python", "--timeout", "90s",
			"--upstream", "store='" + os.Args[0] + "'", "--upstream-env", "store=" + upstreamChildEnv + "=1"})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), upstreamBound)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, transport, nil)
	require.NoError(t, err, "the server's stderr: %s", stderr.String())
	defer cs.Close()
	for _, script := range []string{
		"[host.store__note({}), host.store__item({'id': 7})['title']]",
		"import asyncio\nasync def main():\n    r = await asyncio.gather(host.store__note({}), host.store__item({'id': 7}))\n    return [r[0], r[1]['title']]\nawait main()",
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"script": script}})
		require.NoError(t, err)
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var r mcpserver.Result
		require.NoError(t, json.Unmarshal(b, &r))
		require.True(t, r.OK, "%s", b)
		var got []string
		require.NoError(t, json.Unmarshal(r.Value, &got), "%s", r.Value)
		assert.Equal(t, []string{upstreamNote, "item 7"}, got)
	}
}
