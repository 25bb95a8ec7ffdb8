package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/doortest"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/tenant"
)

// TestEveryDoorResolvesAlike sends each request of doortest.Cases through
// the HTTP server, the MCP server and the command line, and gets the same
// engine or the same kind of refusal from each (the Temporal door runs the
// same table in its own module: temporal's TestTheDoorsTable). Each door
// resolves engines through package pool; a door with a policy of its own
// fails here.
func TestEveryDoorResolvesAlike(t *testing.T) {
	doors := map[string]func(t *testing.T, c doortest.Case) (engine string, kind effect.Kind, skip bool){
		"http": httpDoor,
		"mcp":  mcpDoor,
		"cli":  cliDoor,
	}
	for _, c := range doortest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			for name, door := range doors {
				engine, kind, skip := door(t, c)
				if skip {
					continue
				}
				assert.Equal(t, c.Want, engine, "%s: the engine", name)
				assert.Equal(t, c.Kind, kind, "%s: the kind of answer", name)
			}
		})
	}
}

// httpDoor is POST /v1/runs, by a tenant restricted to c.Allowed.
func httpDoor(t *testing.T, c doortest.Case) (string, effect.Kind, bool) {
	key, digest, err := tenant.NewKey()
	require.NoError(t, err)
	engines, err := json.Marshal(c.Allowed)
	require.NoError(t, err)
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"t","keys":[%q],"engines":%s}]}`, digest, engines))
	require.NoError(t, err)
	srv, err := server.New(doortest.Registry(), &server.Options{Tenants: set})
	require.NoError(t, err)
	defer srv.Close()

	run := map[string]any{"engine": c.Engine, "language": c.Language, "source": "x", "input": doortest.Input}
	if c.WallClock > 0 {
		run["limits"] = map[string]any{"wallClockMs": c.WallClock.Milliseconds()}
	}
	body, err := json.Marshal(run)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "/v1/runs", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code == http.StatusOK {
		var rec effect.Record
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &rec))
		assert.JSONEq(t, string(doortest.Input), string(rec.Value))
		return rec.Receipt.Engine, 0, false
	}
	var p server.Problem
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p), "%s", w.Body)
	if p.Kind == server.KindInvalidCall {
		return "", effect.KindInvalidCall, false
	}
	return "", effect.KindInfrastructure, false
}

// mcpDoor calls the run tool of the request's language (an engine named
// alone: its language, as 'sandbank mcp --engine' serves it), the engine
// chosen by the server's options and the caller restricted by its
// admission.
func mcpDoor(t *testing.T, c doortest.Case) (string, effect.Kind, bool) {
	reg := doortest.Registry()
	lang := c.Language
	if lang == "" && c.Engine != "" {
		lang = "javascript" // an unknown engine: New refuses it for any tool
		if e, err := reg.Lookup(c.Engine); err == nil {
			lang = e.Language
		}
	}
	if lang == "" {
		return "", 0, true // every call is a tool's, of its language
	}
	opts := &mcpserver.Options{Languages: []string{lang}}
	if c.Engine != "" {
		opts.Engines = map[string]string{lang: c.Engine}
	}
	opts.Admit = func(context.Context, *mcp.CallToolRequest, string) (mcpserver.Admission, error) {
		return mcpserver.Admission{Engines: c.Allowed}, nil
	}
	srv, err := mcpserver.New(reg, opts)
	if err != nil {
		return "", effect.KindOf(err), false
	}
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
	args := map[string]any{"script": "x", "input": doortest.Input}
	if c.WallClock > 0 {
		args["limits"] = map[string]any{"timeoutMs": c.WallClock.Milliseconds()}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_" + lang, Arguments: args})
	require.NoError(t, err)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var r mcpserver.Result
	require.NoError(t, json.Unmarshal(b, &r))
	switch {
	case r.OK:
		assert.JSONEq(t, string(doortest.Input), string(r.Value))
		return r.Engine, 0, false
	case r.InvalidCall != "":
		return "", effect.KindInvalidCall, false
	}
	return "", effect.KindInfrastructure, false
}

// cliDoor is 'sandbank run --json', which has no restriction of its own
// and whose --timeout is its ceiling.
func cliDoor(t *testing.T, c doortest.Case) (string, effect.Kind, bool) {
	if len(c.Allowed) > 0 || c.WallClock > 0 {
		return "", 0, true
	}
	a, _ := fakeApp(t)
	a.newRegistry = func() (*registry.Registry, error) { return doortest.Registry(), nil }
	args := []string{"run", "--json", "--no-cache", "--input", string(doortest.Input)}
	if c.Engine != "" {
		args = append(args, "--engine", c.Engine)
	}
	if c.Language != "" {
		args = append(args, "--lang", c.Language)
	}
	res := cli(a, "x", append(args, "-")...)
	switch res.code {
	case exitOK:
		var out struct {
			Value   json.RawMessage `json:"value"`
			Receipt record.Receipt  `json:"receipt"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		assert.JSONEq(t, string(doortest.Input), string(out.Value))
		return out.Receipt.Engine, 0, false
	case exitUsage:
		return "", effect.KindInvalidCall, false
	}
	t.Logf("cli: exit %d: %s", res.code, res.stderr)
	return "", effect.KindInfrastructure, false
}
