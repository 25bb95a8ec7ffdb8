package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// warmEngines builds every engine of reg once, warms it (spi.Warmer) and
// closes it, before serve reports that it listens: what a backend keeps
// for the whole process (the rewritten module, its compiled code, read
// from the cache directory or compiled) is then ready, so the server's
// own backend of each engine, built on its first request, starts in
// milliseconds. A failure is logged and left to that request, which
// tries again. It stops early when ctx is done.
func warmEngines(ctx context.Context, reg *registry.Registry, log *slog.Logger) {
	start := time.Now()
	for _, e := range reg.Engines() {
		if ctx.Err() != nil {
			return
		}
		b, err := e.Factory()
		if err == nil {
			if w, ok := b.(spi.Warmer); ok {
				err = w.Warm(ctx)
			}
			closeBackend(b)
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("sandbank: warming an engine", slog.String("engine", e.Engine), slog.String("error", oneLine(err.Error())))
		}
	}
	log.Info("sandbank: engines warmed", slog.Duration("duration", time.Since(start)))
}
