package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startProgress sends progress notifications for a call whose client asked
// for them (a progress token in the request's _meta): every
// Server.progress while the run lasts, the first one when it has lasted
// that long, each with the seconds elapsed out of the wall-clock limit's.
// The returned stop ends them, and returns once no notification is being
// sent, so none follows the call's result.
func (s *Server) startProgress(ctx context.Context, req *mcp.CallToolRequest, wall time.Duration) (stop func()) {
	if req == nil || req.Params == nil || req.Session == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		tick := time.NewTicker(s.progress)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			elapsed := time.Since(start)
			p := &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      elapsed.Seconds(),
				Message:       fmt.Sprintf("running for %s of its %s wall-clock limit", elapsed.Round(100*time.Millisecond), wall),
			}
			// Progress always grows; the total holds only while the run is
			// within its wall clock (an engine with a soft clock may be
			// stopped a little later).
			if elapsed < wall {
				p.Total = wall.Seconds()
			}
			// A failed notification (a client gone) changes nothing for the
			// run: the call's context says when to stop.
			_ = req.Session.NotifyProgress(ctx, p)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
