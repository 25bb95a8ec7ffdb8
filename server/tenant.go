package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/sandbank/sandbank/tenant"
)

// The tenant admission of every Sandbank HTTP door: the server's own
// routes (Server's middleware) and any other door a program serves, such as
// 'sandbank mcp --http' (RequireTenant). One function decides, so both
// doors answer the same request with the same status and the same
// Problem.

// RequireTenant returns next behind the server's tenant admission, for
// another HTTP door than the server's own routes: a request needs
// "Authorization: Bearer KEY" with the key of one of tenants (else 401,
// kind unauthorized) and a token from that tenant's rate limit (else 429,
// kind quota, with Retry-After). Refusals are the server's Problems
// (application/problem+json). next finds the tenant with TenantFrom. It
// panics when tenants is nil: a door without tenants has no keys to check.
//
// The tenant's other quotas (its engines, its concurrent runs, its limits
// ceiling) apply per run, where the door knows the run.
func RequireTenant(tenants *tenant.Set, next http.Handler) http.Handler {
	if tenants == nil {
		panic("server: RequireTenant with nil tenants")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, p, _ := admitTenant(tenants, nil, r)
		if p != nil {
			p.write(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(withTenant(r.Context(), t)))
	})
}

// TenantFrom returns the tenant a request was admitted as, by
// RequireTenant or by the server's own routes.
func TenantFrom(ctx context.Context) (*tenant.Tenant, bool) {
	t, ok := ctx.Value(tenantKey).(*tenant.Tenant)
	return t, ok && t != nil
}

func withTenant(ctx context.Context, t *tenant.Tenant) context.Context {
	return context.WithValue(ctx, tenantKey, t)
}

// admitTenant returns the tenant of r, or the Problem that refuses it and
// the reason the metrics count. The tenant is r's bearer key's among
// tenants, or dev when tenants is nil (development mode); a refusal for
// its rate limit still returns the tenant, for the access log.
func admitTenant(tenants *tenant.Set, dev *tenant.Tenant, r *http.Request) (*tenant.Tenant, *Problem, string) {
	t := dev
	if tenants != nil {
		key, ok := bearerKey(r.Header.Get("Authorization"))
		if !ok {
			return nil, problem(http.StatusUnauthorized, KindUnauthorized, "server: missing API key (Authorization: Bearer KEY)"), rejectUnauthorized
		}
		if t, ok = tenants.Authenticate(key); !ok {
			return nil, problem(http.StatusUnauthorized, KindUnauthorized, "server: unknown API key"), rejectUnauthorized
		}
	}
	if ok, after := t.Allow(); !ok {
		return t, quota("server: the tenant's rate limit is reached", after), rejectRateLimit
	}
	return t, nil, ""
}

// bearerKey returns the key of an Authorization header "Bearer KEY" (the
// scheme in any case, RFC 9110 section 11.1).
func bearerKey(h string) (string, bool) {
	f := strings.Fields(h)
	if len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
		return "", false
	}
	return f[1], true
}
