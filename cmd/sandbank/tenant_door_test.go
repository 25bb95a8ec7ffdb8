package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/doortest"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/tenant"
)

// TestTenantDoorsAnswerAlike sends the same requests without a key, with
// an unknown key, and past a tenant's rate to both HTTP doors, 'sandbank
// serve' (the server's routes) and 'sandbank mcp --http' (the MCP
// handler as the command wires it): each door answers with the same
// status, headers and problem+json body.
func TestTenantDoorsAnswerAlike(t *testing.T) {
	key, digest, err := tenant.NewKey()
	require.NoError(t, err)
	doc := []byte(`{"tenants": [{"name": "acme", "keys": ["` + digest + `"], "ratePerSecond": 0.001, "burst": 1}]}`)
	tenants := func() *tenant.Set {
		s, err := tenant.Parse(doc)
		require.NoError(t, err)
		return s
	}

	reg := registry.New()
	b, err := goja.New(nil)
	require.NoError(t, err)
	caps := b.Capabilities()
	reg.Register(registry.Entry{Engine: "goja", Language: caps.Language, Capabilities: caps,
		Factory: func() (spi.Backend, error) { return goja.New(nil) }})

	srv, err := server.New(reg, &server.Options{Tenants: tenants()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	msrv, err := mcpserver.New(reg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = msrv.Close() })
	doors := []struct {
		name    string
		handler http.Handler
		path    string
	}{
		{"serve", srv, "/v1/engines"},
		{"mcp --http", msrv.HTTPHandler(mcpHTTPOptions(&mcpOptions{}, tenants())), "/"},
	}

	type answer struct {
		Status     int
		Type       string
		RetryAfter bool
		Members    []string
		Body       map[string]any
	}
	ask := func(h http.Handler, path, authorization string) answer {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		a := answer{Status: w.Code, Type: w.Header().Get("Content-Type"), RetryAfter: w.Header().Get("Retry-After") != ""}
		if a.Type == "application/problem+json" {
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &a.Body), "%s", w.Body.String())
			for k := range a.Body {
				a.Members = append(a.Members, k)
			}
			slices.Sort(a.Members)
		}
		return a
	}

	for _, c := range []struct {
		name          string
		authorization string
		status        int
		kind          string
	}{
		{"missing key", "", http.StatusUnauthorized, server.KindUnauthorized},
		{"another scheme", "Basic " + key, http.StatusUnauthorized, server.KindUnauthorized},
		{"unknown key", "Bearer sbk_an-unknown-key-long-enough-to-be-looked-up", http.StatusUnauthorized, server.KindUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			var answers []answer
			for _, d := range doors {
				a := ask(d.handler, d.path, c.authorization)
				assert.Equal(t, c.status, a.Status, d.name)
				assert.Equal(t, "application/problem+json", a.Type, d.name)
				assert.Equal(t, c.kind, a.Body["kind"], d.name)
				assert.Equal(t, false, a.Body["retryable"], d.name)
				answers = append(answers, a)
			}
			assert.Equal(t, answers[0], answers[1], "the two doors answer alike")
		})
	}

	t.Run("over rate", func(t *testing.T) {
		var answers []answer
		for _, d := range doors {
			first := ask(d.handler, d.path, "Bearer "+key)
			require.NotEqual(t, http.StatusUnauthorized, first.Status, d.name)
			require.NotEqual(t, http.StatusTooManyRequests, first.Status, d.name)
			a := ask(d.handler, d.path, "bearer "+key) // the scheme in any case
			assert.Equal(t, http.StatusTooManyRequests, a.Status, d.name)
			assert.Equal(t, "application/problem+json", a.Type, d.name)
			assert.True(t, a.RetryAfter, d.name)
			assert.Equal(t, server.KindQuota, a.Body["kind"], d.name)
			assert.Equal(t, true, a.Body["retryable"], d.name)
			answers = append(answers, a)
		}
		assert.Equal(t, answers[0], answers[1], "the two doors answer alike")
	})
}

// TestTenantOverQuotaAnswersAlike sends the same run, by a tenant whose
// runs in flight are at its cap, through every door a tenant can reach:
// 'sandbank serve' (POST /v1/runs) and 'sandbank mcp --http' (a
// run_javascript call, the tenant admitted as the command wires it).
// Each answers with the kind effect.KindOf gives the tenant's refusal,
// quota, retryable. The command line and the Temporal worker have no
// tenants: no call of theirs is over a tenant's quota.
func TestTenantOverQuotaAnswersAlike(t *testing.T) {
	key, digest, err := tenant.NewKey()
	require.NoError(t, err)
	tenants, err := tenant.Parse([]byte(`{"tenants": [{"name": "acme", "keys": ["` + digest + `"], "maxConcurrentRuns": 1}]}`))
	require.NoError(t, err)
	// The tenant's one run in flight.
	release, err := tenants.Tenants()[0].Acquire()
	require.NoError(t, err)
	defer release()
	reg := doortest.Registry()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	type answer struct {
		Kind      string
		Retryable bool
	}
	doors := map[string]func(t *testing.T) answer{
		"serve": func(t *testing.T) answer {
			srv, err := server.New(reg, &server.Options{Tenants: tenants})
			require.NoError(t, err)
			defer srv.Close()
			req := httptest.NewRequest(http.MethodPost, "/v1/runs", strings.NewReader(`{"language": "javascript", "source": "x", "input": 1}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			assert.Equal(t, http.StatusTooManyRequests, w.Code)
			var p server.Problem
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p), "%s", w.Body)
			return answer{Kind: p.Kind, Retryable: p.Retryable}
		},
		"mcp --http": func(t *testing.T) answer {
			msrv, err := mcpserver.New(reg, &mcpserver.Options{Languages: []string{"javascript"}, Admit: admitTenant})
			require.NoError(t, err)
			defer msrv.Close()
			hs := httptest.NewServer(msrv.HTTPHandler(mcpHTTPOptions(&mcpOptions{}, tenants)))
			defer hs.Close()
			tr := &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: bearer{key}}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, nil)
			require.NoError(t, err)
			defer cs.Close()
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "x", "input": 1}})
			var wire *jsonrpc.Error
			require.ErrorAs(t, err, &wire)
			var a answer
			if len(wire.Data) > 0 {
				require.NoError(t, json.Unmarshal(wire.Data, &a), "%s", wire.Data)
			}
			return a
		},
	}
	for name, door := range doors {
		t.Run(name, func(t *testing.T) {
			a := door(t)
			assert.Equal(t, answer{Kind: effect.KindQuota.String(), Retryable: true}, a)
		})
	}
	assert.Equal(t, server.KindQuota, effect.KindQuota.String(), "the HTTP door's word is the kind's name")
}
