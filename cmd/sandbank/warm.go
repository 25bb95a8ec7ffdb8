package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/sandbank/sandbank/server"
)

// warmServer builds and warms every engine the server offers
// (server.Server.Warm, through its engine pool) before serve reports that
// it listens, so the first request of each engine finds it built: the
// rewritten module and its compiled code read from the cache directory or
// compiled, and a parked pool booted. A failure is logged and left to
// that engine's first request, which builds it again. It stops early
// when ctx is done.
func warmServer(ctx context.Context, srv *server.Server, log *slog.Logger) {
	start := time.Now()
	if err := srv.Warm(ctx); err != nil && ctx.Err() == nil {
		log.Warn("sandbank: warming the engines", slog.String("error", oneLine(err.Error())))
	}
	log.Info("sandbank: engines warmed", slog.Duration("duration", time.Since(start)))
}
