package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/tenant"
)

// The tenants of 'sandbank mcp --http': the same document, keys and quotas
// as 'sandbank serve' (package tenant), read by readTenants.

// tenantKey is where the verifier leaves the tenant, in the TokenInfo the
// SDK hands each request (mcp.RequestExtra.TokenInfo).
const tenantKey = "sandbank.tenant"

// requireTenant is the tenant admission of 'sandbank mcp --http': the
// server's own (server.RequireTenant: a tenant's key, else 401, and a
// token from its rate limit, else 429 with Retry-After, both as the
// server's problem+json), then the SDK's bearer-token middleware, handed
// the tenant already admitted, so that a session stays with the tenant
// that opened it and each tool call carries its tenant
// (mcp.RequestExtra.TokenInfo, read by admitTenant).
func requireTenant(tenants *tenant.Set, next http.Handler) http.Handler {
	admitted := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		t, ok := server.TenantFrom(ctx)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		// Keys do not expire; the tenant's name keeps a session to the
		// tenant that opened it.
		return &auth.TokenInfo{UserID: t.Name, Expiration: time.Now().Add(24 * time.Hour), Extra: map[string]any{tenantKey: t}}, nil
	}
	return server.RequireTenant(tenants, auth.RequireBearerToken(admitted, nil)(next))
}

func tenantOf(info *auth.TokenInfo) *tenant.Tenant {
	if info == nil {
		return nil
	}
	t, _ := info.Extra[tenantKey].(*tenant.Tenant)
	return t
}

// admitTenant applies a tenant's quotas to one tool call: its engines
// (the call runs one of them, or is refused and the model reads why), its
// concurrent runs (at the cap: effect.KindQuota, which the MCP door
// answers as the HTTP door does, quota and retryable) and its limits
// ceiling, and its python packages.
func admitTenant(_ context.Context, req *mcp.CallToolRequest, _ string) (mcpserver.Admission, error) {
	var t *tenant.Tenant
	if req.Extra != nil {
		t = tenantOf(req.Extra.TokenInfo)
	}
	if t == nil {
		return mcpserver.Admission{}, fmt.Errorf("sandbank: the call carries no tenant")
	}
	release, err := t.Acquire()
	if err != nil {
		return mcpserver.Admission{}, err // effect.ErrQuota: the MCP door answers CodeQuota
	}
	// The tenant's engines choose the call's engine as at every door
	// (pool.Pool.Resolve): the first it may use of the tool's language.
	return mcpserver.Admission{Engines: t.Engines, Limits: t.Limits, Release: release, Tenant: t.Name, Packages: t.Packages}, nil
}
