package codemode

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConnectUpstreamAt is ConnectUpstream on the clock now.
func ConnectUpstreamAt(ctx context.Context, name string, dial func() mcp.Transport, opts *UpstreamOptions, now func() time.Time) (*Upstream, error) {
	return connectUpstream(ctx, name, dial, opts, now)
}

// SessionDone is closed when u's session in use ends.
func SessionDone(u *Upstream) <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sess.done
}

// RestartDelay is restartDelay.
var RestartDelay = restartDelay

// ScanDeclarations is scanDeclarations (upstream_decl_fuzz_test.go).
var ScanDeclarations = scanDeclarations
