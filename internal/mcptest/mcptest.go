// Package mcptest connects a test's MCP client to a Sandbank MCP server in
// memory. It is for the tests of mcpserver and codemode only: it imports
// testing, so no program may link it (server/seams_test.go checks the
// sandbank binary).
package mcptest

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// Timeout bounds connecting: long enough for a loaded machine.
const Timeout = 30 * time.Second

// Server is what Connect serves: an mcpserver.Server.
type Server interface {
	MCP() *mcp.Server
	Close() error
}

// Connect serves srv on an in-memory transport and returns a client
// session to it, with copts (nil for the defaults). The session, the
// server's side of it and srv are closed when the test ends.
func Connect(tb testing.TB, srv Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(tb, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts)
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
		_ = srv.Close()
	})
	return cs
}
