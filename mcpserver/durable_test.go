package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// twice asks for approval twice; its value shows the clock too, which a
// replay gives back the same.
const twice = `const a = await host.approve({rows: input.n});
const b = await host.approve("again");
({a, b, t: Date.now()})`

// durableServer serves quickjs with approve suspending, signing receipts,
// its suspended runs in dir; each call's tenant is who's.
func durableServer(t *testing.T, dir string, who *atomic.Value) *mcp.ClientSession {
	t.Helper()
	reg := registry.New()
	f := func() (spi.Backend, error) { return quickjs.New(nil) }
	b, err := f()
	require.NoError(t, err)
	caps := b.Capabilities()
	require.NoError(t, b.(io.Closer).Close())
	reg.Register(registry.Entry{Engine: "quickjs", Language: "javascript", Capabilities: caps, Factory: f})
	require.NoError(t, reg.SetDefault("javascript", "quickjs"))
	signer, err := receipt.GenerateEd25519Signer()
	require.NoError(t, err)
	conts, err := storage.NewDirContinuations(dir, nil)
	require.NoError(t, err)
	srv, err := mcpserver.New(reg, &mcpserver.Options{
		Suspend: []string{"approve"}, Continuations: conts, Signer: signer,
		Admit: func(context.Context, *mcp.CallToolRequest, string) (mcpserver.Admission, error) {
			return mcpserver.Admission{Tenant: who.Load().(string)}, nil
		},
	})
	require.NoError(t, err)
	return connect(t, srv, nil)
}

// requireWaiting checks a suspended run's result and returns its run id.
func requireWaiting(t *testing.T, res *mcp.CallToolResult, r mcpserver.Result, err error, args string) string {
	t.Helper()
	require.NoError(t, err)
	require.NotNil(t, r.Failure, "%s", textOf(res))
	assert.Equal(t, "suspended", r.Failure.Code.String())
	require.NotNil(t, r.Waiting, "%s", textOf(res))
	assert.Equal(t, "approve", r.Waiting.Name)
	assert.JSONEq(t, args, string(r.Waiting.Args))
	assert.Equal(t, r.Run, r.Waiting.Run)
	assert.Contains(t, textOf(res), "resume_run")
	return r.Run
}

// TestDurableRunOverMCP: a run whose script calls a suspending host
// function answers with what it waits for; resume_run continues it (a
// further suspension, then the value), once, for its own caller only,
// with the official SDK's client.
func TestDurableRunOverMCP(t *testing.T) {
	var who atomic.Value
	who.Store("a")
	cs := durableServer(t, t.TempDir(), &who)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == "run_javascript" {
			assert.Contains(t, tool.Description, "host.approve(args)")
		}
	}
	assert.True(t, slices.Contains(names, "resume_run"), "%v", names)

	res, r, err := call(t, cs, "run_javascript", map[string]any{"script": twice, "input": map[string]any{"n": 2}})
	first := requireWaiting(t, res, r, err, `{"rows":2}`)

	who.Store("b")
	res, r, err = call(t, cs, "resume_run", map[string]any{"run": first, "answer": true})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, r.InvalidCall, "no suspended run", "another caller's run is unknown")

	who.Store("a")
	res, r, err = call(t, cs, "resume_run", map[string]any{"run": first, "answer": true})
	second := requireWaiting(t, res, r, err, `"again"`)
	assert.NotEqual(t, first, second)
	res, r, err = call(t, cs, "resume_run", map[string]any{"run": first, "answer": true})
	require.NoError(t, err)
	assert.Contains(t, r.InvalidCall, "no suspended run", "a run is resumed once: %s", textOf(res))

	res, r, err = call(t, cs, "resume_run", map[string]any{"run": second, "answer": false})
	require.NoError(t, err)
	require.True(t, r.OK, "%s", textOf(res))
	var v struct{ A, B bool }
	require.NoError(t, json.Unmarshal(r.Value, &v))
	assert.Equal(t, struct{ A, B bool }{true, false}, v)
	assert.Nil(t, r.Waiting)
	assert.NotEmpty(t, r.Receipt.Previous)
	assert.Equal(t, 2, r.Receipt.Suspensions)

	res, r, err = call(t, cs, "resume_run", map[string]any{"run": second})
	require.NoError(t, err)
	assert.NotEmpty(t, r.InvalidCall, "%s", textOf(res))
}

// TestDurableTamperedRefusedOverMCP: a continuation edited where the
// server keeps it (an earlier answer, the pending call, its signature
// removed while the server signs) is refused: an error result saying
// so, nothing run.
func TestDurableTamperedRefusedOverMCP(t *testing.T) {
	edits := map[string]func(cont map[string]any){
		"answer changed": func(cont map[string]any) {
			cont["hostCalls"].([]any)[0].(map[string]any)["answer"] = false
		},
		"pending changed": func(cont map[string]any) {
			cont["hostCalls"].([]any)[1].(map[string]any)["args"] = "never asked"
		},
		"signature stripped": func(cont map[string]any) {
			delete(cont["receipt"].(map[string]any), "signature")
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			var who atomic.Value
			who.Store("a")
			dir := t.TempDir()
			cs := durableServer(t, dir, &who)
			res, r, err := call(t, cs, "run_javascript", map[string]any{"script": twice, "input": map[string]any{"n": 2}})
			first := requireWaiting(t, res, r, err, `{"rows":2}`)
			res, r, err = call(t, cs, "resume_run", map[string]any{"run": first, "answer": true})
			run := requireWaiting(t, res, r, err, `"again"`)

			path := filepath.Join(dir, run+".json")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			var kept map[string]any
			require.NoError(t, json.Unmarshal(b, &kept))
			cont := kept["continuation"].(map[string]any)
			require.Len(t, cont["hostCalls"], 2)
			edit(cont)
			b, err = json.Marshal(kept)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b, 0o600))

			res, r, err = call(t, cs, "resume_run", map[string]any{"run": run, "answer": true})
			require.NoError(t, err)
			assert.True(t, res.IsError)
			assert.Contains(t, r.InvalidCall, "durable: ", "%s", textOf(res))
			assert.Nil(t, r.Stats, "nothing ran")
		})
	}
}
