package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/sandbank/sandbank/tenant"
)

type ctxKey int

const (
	tenantKey ctxKey = iota + 1
	accessKey
)

// access is what a handler tells the access log about its request.
type access struct {
	tenant  string
	engine  string
	outcome string
	run     string // the run's id, when its receipt was kept
	runTime time.Duration
	queued  time.Duration
}

// statusWriter records the status a handler wrote, and closes the
// connection after a response written before the request's body was read
// to its end (see bodyGuard).
type statusWriter struct {
	http.ResponseWriter
	status int
	body   *bodyGuard // nil: the request has no body
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.body.beforeResponse(w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// public are the routes that need no API key.
func public(path string) bool {
	return path == "/healthz" || path == "/metrics" || strings.HasPrefix(path, "/v1/openapi") || path == KeysPath
}

// middleware wraps the routes: it bounds the body before anything reads
// it (and closes the connection after a response that leaves some of it
// unread), takes the trace context from the headers, authenticates the
// tenant and applies its rate limit before the body is read, and writes
// one access record per request.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		acc := &access{}
		defer func() {
			route := routeOf(r.URL.Path)
			s.metrics.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
			attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", route),
				slog.Int("status", sw.status), slog.Duration("duration", time.Since(start)),
				slog.Int64("bytesIn", r.ContentLength)}
			if acc.tenant != "" {
				attrs = append(attrs, slog.String("tenant", acc.tenant))
			}
			if acc.engine != "" {
				attrs = append(attrs, slog.String("engine", acc.engine), slog.String("outcome", acc.outcome),
					slog.Duration("run", acc.runTime), slog.Duration("queued", acc.queued))
			}
			if acc.run != "" {
				attrs = append(attrs, slog.String("runId", acc.run))
			}
			level := slog.LevelInfo
			if sw.status >= 500 {
				level = slog.LevelWarn
			}
			s.log.LogAttrs(r.Context(), level, "sandbank: request", attrs...)
		}()

		sw.body = guardBody(w, r, s.opts.MaxBodyBytes)
		defer sw.body.release(r)
		ctx := s.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx = context.WithValue(ctx, accessKey, acc)
		sw.Header().Set("X-Content-Type-Options", "nosniff")

		if !public(r.URL.Path) {
			t, p, reason := admitTenant(s.tenants, s.dev, r)
			if t != nil {
				acc.tenant = t.Name
			}
			if p != nil {
				s.metrics.rejected.WithLabelValues(reason).Inc()
				p.write(sw)
				return
			}
			ctx = withTenant(ctx, t)
		}
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// tenantOf returns the tenant the middleware admitted the request as.
func tenantOf(ctx context.Context) *tenant.Tenant {
	t, _ := TenantFrom(ctx)
	return t
}

func accessOf(ctx context.Context) *access {
	if a, ok := ctx.Value(accessKey).(*access); ok {
		return a
	}
	return &access{}
}

// routeOf names a path's route for logs and metrics, with a fixed set of
// values (never the path itself, which a caller chooses).
func routeOf(path string) string {
	switch path {
	case "/v1/runs", "/v1/scripts", "/v1/engines", "/healthz", "/metrics", "/v1/openapi.json", "/v1/openapi.yaml", KeysPath:
		return path
	}
	if strings.HasPrefix(path, "/v1/runs/") && strings.HasSuffix(path, "/receipt") {
		return "/v1/runs/{run}/receipt"
	}
	if strings.HasPrefix(path, "/v1/scripts/") {
		return "/v1/scripts/{address}"
	}
	return "other"
}
