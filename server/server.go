package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandbank/sandbank/conformance/verdict"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
	"github.com/sandbank/sandbank/tenant"
)

// The defaults of Options.
const (
	DefaultMaxQueue          = 64
	DefaultQueueTimeout      = 2 * time.Second
	DefaultMaxBodyBytes      = 8 << 20
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxConnections    = 1024
)

// shutdownGrace is how long Shutdown waits, past its deadline and the
// cancellation of the runs, for the handlers to answer.
const shutdownGrace = 5 * time.Second

// Options configure a Server. A nil *Options means defaults, and
// development mode: see Tenants.
type Options struct {
	// Tenants are the callers and their quotas. Nil is development mode:
	// no keys, every request is the tenant "dev" (tenant.Dev), and Serve
	// refuses a listener that is not on a loopback address.
	Tenants *tenant.Set
	// Limits is the server's ceiling for every run (the effect's
	// Options.Limits); a tenant's ceiling may only lower it. Zero fields
	// mean the effect's defaults.
	Limits spi.Limits
	// MaxConcurrentRuns caps the runs in flight across all tenants. Zero
	// means 2 × GOMAXPROCS.
	MaxConcurrentRuns int
	// MaxQueue bounds the runs waiting for a slot; past it a run is
	// refused with 503 at once. Zero means DefaultMaxQueue.
	MaxQueue int
	// QueueTimeout bounds a run's wait for a slot; past it, 503. Zero
	// means DefaultQueueTimeout.
	QueueTimeout time.Duration
	// MaxBodyBytes bounds a request body, enforced before it is read
	// (413). Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxConnections bounds the connections Serve holds open at once;
	// further clients wait in the kernel's backlog. Zero means
	// DefaultMaxConnections.
	MaxConnections int
	// Data is where the server keeps, per tenant, its scripts and the
	// receipts of the runs it answered (storage.OpenData): in a data
	// directory each is synced to disk before the answer is sent, and its
	// lock keeps a second server out (see docs/data-dir.md); in memory
	// the least recently used scripts are evicted and a restart loses
	// them. A full store on disk refuses a new script (413), since what
	// it acknowledged is kept. The server closes it on Shutdown and Close
	// (not when New fails). Nil means in memory, with storage's default
	// bounds.
	Data *storage.Data
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// Serve's http.Server timeouts, so a slow client cannot hold a
	// connection or a run. Zero means DefaultReadHeaderTimeout,
	// DefaultReadTimeout, the ceiling's wall clock + QueueTimeout + 30 s,
	// and DefaultIdleTimeout.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Logger receives one access record per request (never the input or
	// the script) and the server's own diagnostics. Nil means none.
	Logger *slog.Logger
	// TracerProvider traces every run (the effect's spans), as children of
	// the trace context of the incoming request's headers (W3C traceparent
	// and baggage). Nil means no tracing.
	TracerProvider trace.TracerProvider
	// Verify checks an engine for GET /v1/engines' verified capabilities:
	// a program wires it to the conformance kit (conformance.Check with
	// the engine's factory), so the server itself never links the kit, its
	// hostile fixtures or package testing. The server calls it at most once
	// per engine, one at a time, in the background (see Verification);
	// a report's failed cases make the verdict "failed", an error "error".
	// Nil means the verdict is "unchecked".
	Verify func(ctx context.Context, e registry.Entry) (*verdict.Report, error)
	// AllowNetwork and AllowReusedEnvironment are the effect's opt-ins;
	// an engine the effect refuses without them cannot run.
	AllowNetwork, AllowReusedEnvironment bool
	// Version is the server's version in the OpenAPI document. Empty means
	// "dev".
	Version string
	// Signer signs every run's receipt (effect.Options.Signer); its
	// public key is published at KeysPath. Nil means the data directory's
	// key (storage.SigningKeyFile, generated on the first start) or,
	// without a data directory, a key generated in memory when New is
	// called (logged by its id): receipts signed by it cannot be checked
	// after a restart.
	Signer record.Signer
	// RetiredKeys are keys that signed this server's receipts before the
	// Signer's, each with its Retired date; they are published at
	// KeysPath beside the current key. Nil means none.
	RetiredKeys []receipt.TrustedKey
	// Packages builds an engine whose scripts may import exactly a
	// tenant's packages (tenant.Tenant.Packages), as pool.Options.Packages
	// does: the command line passes builtin.PackagesFactory. Nil means
	// none, and a tenant that names packages is refused.
	Packages func(e registry.Entry, packages []string) spi.Factory
}

// Server is the HTTP API of Sandbank: an http.Handler, with Serve and
// Shutdown for a server of its own.
type Server struct {
	opts      Options
	reg       *registry.Registry
	tenants   *tenant.Set // nil: development mode
	dev       *tenant.Tenant
	pool      *pool.Pool
	verifier  *verifier
	admission *admission
	metrics   *metrics
	prop      propagation.TextMapPropagator
	log       *slog.Logger
	handler   http.Handler
	api       huma.API

	data    *storage.Data // the tenants' scripts and receipts
	signing *signing      // keys.go

	// hard is cancelled when Shutdown's drain deadline passes: every run
	// still going is cancelled and its caller gets a retryable 503.
	hard       context.Context
	cancelHard context.CancelFunc
	draining   atomic.Bool

	srvMu     sync.Mutex
	srvs      []*http.Server
	listeners []*limitListener
}

// ErrInvalidOptions is matched by every error New returns for options it
// refuses (a nil registry, a negative value), and by Serve's refusal of a
// listener that is not on a loopback address in development mode. It
// matches effect.ErrInvalidCall too: the caller's own mistake, not
// retryable.
var ErrInvalidOptions = fmt.Errorf("server: invalid options: %w", effect.ErrInvalidCall)

// New returns a Server running the engines of reg. It validates opts: an
// error matches ErrInvalidOptions. With a data directory
// (Options.Data) and no Options.Signer, it reads the directory's signing
// key, or makes one (storage.SigningKeyFile).
func New(reg *registry.Registry, opts *Options) (*Server, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil registry", ErrInvalidOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxConcurrentRuns < 0, o.MaxQueue < 0, o.QueueTimeout < 0, o.MaxBodyBytes < 0,
		o.MaxConnections < 0, o.ReadHeaderTimeout < 0, o.ReadTimeout < 0,
		o.WriteTimeout < 0, o.IdleTimeout < 0, o.Limits.WallClock < 0, o.Limits.MemoryBytes < 0:
		return nil, fmt.Errorf("%w: negative value", ErrInvalidOptions)
	}
	if o.Packages == nil && o.Tenants != nil && slices.ContainsFunc(o.Tenants.Tenants(), func(t *tenant.Tenant) bool { return len(t.Packages) > 0 }) {
		return nil, fmt.Errorf("%w: a tenant names packages, and Options.Packages is nil", ErrInvalidOptions)
	}
	if o.MaxConcurrentRuns == 0 {
		o.MaxConcurrentRuns = 2 * runtime.GOMAXPROCS(0)
	}
	if o.MaxQueue == 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	if o.QueueTimeout == 0 {
		o.QueueTimeout = DefaultQueueTimeout
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.Limits.WallClock == 0 {
		o.Limits.WallClock = effect.DefaultWallClock
	}
	if o.Limits.MemoryBytes == 0 {
		o.Limits.MemoryBytes = effect.DefaultMemoryBytes
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = o.Limits.WallClock + o.QueueTimeout + 30*time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:    o,
		reg:     reg,
		tenants: o.Tenants,
		prop:    propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		log:     log,
	}
	s.metrics = newMetrics(func() float64 { return float64(s.data.Damaged()) })
	if s.tenants == nil {
		s.dev = tenant.Dev()
	}
	s.hard, s.cancelHard = context.WithCancel(context.Background())
	var err error
	if s.data = o.Data; s.data == nil {
		if s.data, err = storage.OpenData(nil); err != nil {
			return nil, err
		}
	}
	if s.signing, err = newSigning(&o, s.data.Dir(), log); err != nil {
		return nil, err
	}
	s.pool, err = pool.New(reg, &pool.Options{Effect: effect.Options{
		Limits:                 o.Limits,
		MaxScriptBytes:         o.MaxBodyBytes,
		AllowNetwork:           o.AllowNetwork,
		AllowReusedEnvironment: o.AllowReusedEnvironment,
		Logger:                 o.Logger,
		TracerProvider:         o.TracerProvider,
		Signer:                 s.signing.signer,
	}, Packages: o.Packages})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	s.verifier = &verifier{check: o.Verify, ctx: s.hard, results: map[string]*Verification{},
		queue: make(chan registry.Entry, 256)}
	s.admission = newAdmission(o.MaxConcurrentRuns, o.MaxQueue, o.QueueTimeout,
		func(n int64) { s.metrics.queue.Set(float64(n)) })

	mux := http.NewServeMux()
	s.api = s.register(mux)
	s.registerKeys(s.api)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	s.handler = s.middleware(mux)
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// OpenAPI returns the server's OpenAPI 3.1 document, as GET
// /v1/openapi.json serves it.
func (s *Server) OpenAPI() *huma.OpenAPI { return s.api.OpenAPI() }

// Serve accepts connections on ln with the server's timeouts until
// Shutdown, then returns http.ErrServerClosed. In development mode (no
// Tenants) it refuses a listener that is not on a loopback address.
func (s *Server) Serve(ln net.Listener) error {
	if s.tenants == nil && !IsLoopback(ln.Addr()) {
		return fmt.Errorf("%w: development mode (no API keys) serves only on a loopback address, not %s", ErrInvalidOptions, ln.Addr())
	}
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.srvMu.Lock()
	if s.draining.Load() {
		s.srvMu.Unlock()
		return http.ErrServerClosed
	}
	ll := newLimitListener(ln, s.opts.MaxConnections)
	s.srvs = append(s.srvs, hs)
	s.listeners = append(s.listeners, ll)
	s.srvMu.Unlock()
	return hs.Serve(ll)
}

// IsLoopback reports whether addr is on a loopback address (127.0.0.0/8,
// ::1).
func IsLoopback(addr net.Addr) bool {
	host := addr.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Shutdown stops accepting connections and lets the runs in flight finish
// until ctx is done; then it cancels them (their callers get a retryable
// 503), waits for their handlers to answer, and closes the engines. New
// runs during the drain are refused with a retryable 503.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.srvMu.Lock()
	srvs := s.srvs
	s.srvMu.Unlock()
	// Past the drain deadline the runs are cancelled: their handlers then
	// answer at once, and the http.Servers' Shutdown returns. A handler
	// that still has not answered shutdownGrace later (a client that
	// does not read its response) has its connection closed.
	drain, stopDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDrain()
	stop := context.AfterFunc(ctx, func() {
		s.cancelHard()
		time.AfterFunc(shutdownGrace, stopDrain)
	})
	defer stop()
	errs := make(chan error, len(srvs))
	for _, hs := range srvs {
		go func() {
			err := hs.Shutdown(drain)
			if err != nil {
				err = errors.Join(err, hs.Close())
			}
			errs <- err
		}()
	}
	var all []error
	for range srvs {
		all = append(all, <-errs)
	}
	s.cancelHard()
	all = append(all, s.pool.Close(), s.data.Close())
	return errors.Join(all...)
}

// Close cancels every run at once and closes the engines and the
// listeners.
func (s *Server) Close() error {
	s.draining.Store(true)
	s.cancelHard()
	s.srvMu.Lock()
	srvs := s.srvs
	s.srvMu.Unlock()
	var errs []error
	for _, hs := range srvs {
		errs = append(errs, hs.Close())
	}
	errs = append(errs, s.pool.Close(), s.data.Close())
	return errors.Join(errs...)
}

// openConnections returns the connections Serve holds open.
func (s *Server) openConnections() int {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	n := 0
	for _, l := range s.listeners {
		n += len(l.slots)
	}
	return n
}
