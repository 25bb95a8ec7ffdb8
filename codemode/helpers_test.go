package codemode_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/codemode"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/internal/mcptest"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// testTimeout bounds every wait of these tests: far above what any step
// takes on a loaded machine, so that only a hang reaches it.
const testTimeout = 30 * time.Second

// echoRegistry has one fake JavaScript engine, which declares no host
// calls: the value of a run is its input.
func echoRegistry() *registry.Registry {
	caps := fakebackend.Capabilities()
	caps.Language = "javascript"
	echo := func(_ context.Context, req spi.Request) (spi.Outcome, error) { return spi.OK(req.Input), nil }
	r := registry.New()
	r.Register(registry.Entry{Engine: "fake-javascript", Language: "javascript", Capabilities: caps,
		Factory: func() (spi.Backend, error) { return fakebackend.New(caps, echo), nil }})
	return r
}

// connect serves srv on an in-memory transport and returns a client
// session to it (mcptest.Connect).
func connect(t *testing.T, srv *mcpserver.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, srv, copts)
}

// hostOf serves ups together (codemode.NewHost).
func hostOf(t *testing.T, ups ...*codemode.Upstream) *codemode.Host {
	t.Helper()
	h, err := codemode.NewHost(ups...)
	require.NoError(t, err)
	return h
}
