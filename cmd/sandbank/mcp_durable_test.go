package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/tenant"
)

// TestMCPAdmissionNamesTheTenant: 'sandbank mcp --http' admits a call as
// its tenant, so a run it suspends is resumed by that tenant only
// (mcpserver's TestDurableRunOverMCP proves the ownership).
func TestMCPAdmissionNamesTheTenant(t *testing.T) {
	key, digest, err := tenant.NewKey()
	require.NoError(t, err)
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"acme","keys":[%q]}]}`, digest))
	require.NoError(t, err)
	acme, ok := set.Authenticate(key)
	require.True(t, ok)
	req := &mcp.CallToolRequest{Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{
		UserID: "acme", Expiration: time.Now().Add(time.Hour), Extra: map[string]any{tenantKey: acme}}}}
	adm, err := admitTenant(context.Background(), req, "quickjs")
	require.NoError(t, err)
	defer adm.Release()
	assert.Equal(t, "acme", adm.Tenant)
}
