package server

import (
	"context"
	"fmt"
)

// The server's engines are a pool.Pool (s.pool): each engine's effect is
// built on the first run that needs it and kept until Close. Every run
// hands its script to the effect as Call.Source (the server reads
// by-address scripts from the tenant's own store first), so the effects
// share one empty store and never read a script by address themselves.

// Warm builds and warms the named engines (every engine of the registry
// when none is named) before their first run (pool.Pool.Warm), so that
// the first request does not pay for a compile. An engine that failed is
// built again by its first run.
func (s *Server) Warm(ctx context.Context, engines ...string) error {
	if err := s.pool.Warm(ctx, engines...); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}
