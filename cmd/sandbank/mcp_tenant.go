package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/tenant"
	"github.com/sandbank/sandbank/mcpserver"
)

// The tenants of 'sandbank mcp --http': the same document, keys and quotas
// as 'sandbank serve' (internal/tenant).

// tenantKey is where the verifier leaves the tenant, in the TokenInfo the
// SDK hands each request (mcp.RequestExtra.TokenInfo).
const tenantKey = "sandbank.tenant"

// mcpTenants reads the tenants from --tenants or $SANDBANK_TENANTS; nil
// when neither is given.
func mcpTenants(o *mcpOptions) (*tenant.Set, error) {
	if o.tenantsFile != "" {
		s, err := tenant.Load(o.tenantsFile)
		if err != nil {
			return nil, usagef("--tenants: %s: %s", effect.Excerpt(o.tenantsFile), reason(err))
		}
		return s, nil
	}
	s, ok, err := tenant.FromEnv()
	switch {
	case err != nil:
		return nil, usagef("$%s: %s", tenant.EnvVar, reason(err))
	case !ok:
		return nil, nil
	}
	return s, nil
}

// requireTenant lets through only requests with a tenant's key
// ("Authorization: Bearer KEY"; 401 otherwise) within its rate limit (429
// with Retry-After otherwise).
func requireTenant(tenants *tenant.Set, next http.Handler) http.Handler {
	verify := func(_ context.Context, key string, _ *http.Request) (*auth.TokenInfo, error) {
		t, ok := tenants.Authenticate(key)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		// Keys do not expire; the tenant's name keeps a session to the
		// tenant that opened it.
		return &auth.TokenInfo{UserID: t.Name, Expiration: time.Now().Add(24 * time.Hour), Extra: map[string]any{tenantKey: t}}, nil
	}
	limited := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := tenantOf(auth.TokenInfoFromContext(r.Context()))
		if t == nil {
			http.Error(w, "sandbank: no tenant", http.StatusUnauthorized)
			return
		}
		if ok, after := t.Allow(); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(after.Seconds()))))
			http.Error(w, "sandbank: rate limit: try again later", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
	return auth.RequireBearerToken(verify, nil)(limited)
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
// concurrent runs (at
// the cap: a retryable protocol error) and its limits ceiling.
func admitTenant(_ context.Context, req *mcp.CallToolRequest, _ string) (mcpserver.Admission, error) {
	var t *tenant.Tenant
	if req.Extra != nil {
		t = tenantOf(req.Extra.TokenInfo)
	}
	if t == nil {
		return mcpserver.Admission{}, fmt.Errorf("sandbank: the call carries no tenant")
	}
	release, ok := t.Acquire()
	if !ok {
		return mcpserver.Admission{}, fmt.Errorf("sandbank: tenant %s has %d runs in flight, its cap: try again when one ends (retryable)", t.Name, t.MaxConcurrentRuns)
	}
	// The tenant's engines choose the call's engine as at every door
	// (pool.Pool.Resolve): the first it may use of the tool's language.
	return mcpserver.Admission{Engines: t.Engines, Limits: t.Limits, Release: release}, nil
}
