package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/tenant"
)

// needNumpyAndCycler skips where /usr/bin/python3 cannot import numpy and
// cycler (Debian: python3-numpy, and python3-cycler, which
// python3-matplotlib brings), except in CI (CI=true), which installs
// them: a skip there is a failure.
func needNumpyAndCycler(t *testing.T) {
	t.Helper()
	skipWithoutPython(t)
	err := exec.Command("/usr/bin/python3", "-c", "import numpy, cycler").Run()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI must install python3-numpy and python3-matplotlib for /usr/bin/python3: %v", err)
	}
	t.Skipf("/usr/bin/python3 cannot import numpy and cycler (Debian: apt-get install python3-numpy python3-matplotlib): %v", err)
}

// TestTenantPackagesAtBothHTTPDoors: the tenants document's "packages"
// reach python at both HTTP doors as the command wires them ('sandbank
// serve': server.Options.Packages; 'sandbank mcp --http':
// admitTenant's Admission.Packages): tenant numpy imports numpy and not
// cycler, tenant cycler the other way round, each from an engine of its
// own set (pool.Pool.Effect).
func TestTenantPackagesAtBothHTTPDoors(t *testing.T) {
	needNumpyAndCycler(t)
	numpyKey, numpyDigest, err := tenant.NewKey()
	require.NoError(t, err)
	cyclerKey, cyclerDigest, err := tenant.NewKey()
	require.NoError(t, err)
	tenants, err := tenant.Parse([]byte(`{"tenants": [
		{"name": "numpy", "keys": ["` + numpyDigest + `"], "packages": ["numpy"]},
		{"name": "cycler", "keys": ["` + cyclerDigest + `"], "packages": ["cycler"]}]}`))
	require.NoError(t, err)
	reg := &registry.Registry{}
	builtin.Register(reg)

	const (
		useNumpy  = "import numpy\nint(numpy.arange(4).sum())\n"
		useCycler = "import cycler\nlen(cycler.cycler(c=[1, 2, 3]))\n"
	)
	cases := []struct {
		key, script, want string // want: the value, or else a text of the failure
	}{
		{numpyKey, useNumpy, "6"},
		{numpyKey, useCycler, "ModuleNotFoundError"},
		{cyclerKey, useCycler, "3"},
		{cyclerKey, useNumpy, "ModuleNotFoundError"},
	}

	t.Run("serve", func(t *testing.T) {
		srv, err := server.New(reg, &server.Options{Tenants: tenants, Packages: tenantPackages("", true)})
		require.NoError(t, err)
		defer srv.Close()
		for _, c := range cases {
			body, err := json.Marshal(map[string]any{"language": "python", "source": c.script})
			require.NoError(t, err)
			req := httptest.NewRequest(http.MethodPost, "/v1/runs", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+c.key)
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			var rec struct {
				Value json.RawMessage `json:"value"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &rec), w.Body.String())
			if strings.Contains(c.want, "Error") {
				assert.Contains(t, w.Body.String(), c.want, c.script)
			} else {
				assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
				assert.Equal(t, c.want, string(rec.Value), w.Body.String())
			}
		}
	})

	t.Run("mcp --http", func(t *testing.T) {
		msrv, err := mcpserver.New(reg, &mcpserver.Options{Languages: []string{"python"},
			Admit: admitTenant, Packages: tenantPackages("", true)})
		require.NoError(t, err)
		defer msrv.Close()
		hs := httptest.NewServer(msrv.HTTPHandler(mcpHTTPOptions(&mcpOptions{}, tenants)))
		defer hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), mcpWarmBound)
		defer cancel()
		for _, c := range cases {
			client := mcp.NewClient(&mcp.Implementation{Name: "sandbank-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: bearer{c.key}}}, nil)
			require.NoError(t, err)
			res, r := callTool(t, cs, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"script": c.script}})
			if strings.Contains(c.want, "Error") {
				assert.False(t, r.OK)
				assert.Contains(t, textOf(res), c.want, c.script)
			} else {
				assert.True(t, r.OK, textOf(res))
				assert.Equal(t, c.want, string(r.Value), textOf(res))
			}
			require.NoError(t, cs.Close())
		}
	})
}
