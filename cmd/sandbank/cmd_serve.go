package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/storage"
	"github.com/sandbank/sandbank/tenant"
)

type serveOptions struct {
	addr, tenantsFile string
	dev, noVerify     bool
	newKey            bool
	maxRuns, queue    int
	queueTimeout      time.Duration
	drain             time.Duration
	logFormat         string
	dataDir           string
	inMemory          bool
	signKey           string   // serve_sign.go
	packages          []string // --package NAME (packages.go)
	retiredKeys       string
}

func (a *app) serveCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the effect over HTTP, with tenants and quotas",
		Long: `serve runs the Sandbank HTTP API (see docs/architecture.md and the
OpenAPI document at /v1/openapi.json) on --addr.

Callers authenticate with "Authorization: Bearer KEY". The tenants, their
key digests (never the keys) and quotas come from --tenants FILE or, without
it, from the environment variable SANDBANK_TENANTS (the document itself).
A tenant's "packages" are what its python runs may import, in place of
--package (see docs/serving.md). 'sandbank serve --new-key' prints a new
key and the digest to put in the document.

--dev serves without keys (every caller is the tenant "dev") and only on a
loopback address: it refuses any other --addr.

The server keeps each tenant's scripts and the receipts of the runs it
answered in --data-dir (default $XDG_STATE_HOME/sandbank, or
~/.local/state/sandbank), each synced to disk before it answers; on start
it reads them back and checks them. GET /v1/runs/{run}/receipt returns a
run's receipt by the id in its answer's Sandbank-Run header. --in-memory
keeps them in memory instead: a restart loses them. See
docs/data-dir.md for the layout and the receipt log's rotation.

Every receipt is signed with --sign-key FILE (see 'sandbank keygen'; a
file anyone but its owner may read is refused) or, without it, with the
data directory's key (keys/signing.key, generated on the first start),
or with --in-memory a key generated for this process, whose id is
logged. The public keys,
current and retired (--retired-keys DIR), are published at
/.well-known/sandbank-keys for 'sandbank verify --keys'.

SIGINT or SIGTERM stops accepting connections and drains the runs in flight
for --drain; then the runs still going are cancelled (their callers get a
retryable 503) and the server exits.`,
		Example: `  sandbank serve --dev
  sandbank serve --addr 0.0.0.0:8080 --tenants tenants.json
  sandbank serve --dev --data-dir /var/lib/sandbank
  sandbank serve --new-key`,
		Args: cobra.NoArgs,
		RunE: wrap(func(cmd *cobra.Command, _ []string) error { return a.serve(cmd.Context(), &o) }),
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT`")
	f.BoolVar(&o.dev, "dev", false, "development mode: no API keys, loopback addresses only")
	f.StringVar(&o.tenantsFile, "tenants", "", "read the tenants document from `FILE` (default: $"+tenant.EnvVar+")")
	f.BoolVar(&o.newKey, "new-key", false, "print a new API key and its digest for the tenants document, and exit")
	f.IntVar(&o.maxRuns, "max-runs", 0, "runs in flight across all tenants (default 2 × GOMAXPROCS)")
	f.IntVar(&o.queue, "queue", 0, fmt.Sprintf("runs that may wait for a slot (default %d)", server.DefaultMaxQueue))
	f.DurationVar(&o.queueTimeout, "queue-timeout", 0, fmt.Sprintf("longest wait for a slot (default %s)", server.DefaultQueueTimeout))
	f.DurationVar(&o.drain, "drain", 30*time.Second, "on SIGINT/SIGTERM, how long the runs in flight may finish")
	f.BoolVar(&o.noVerify, "no-verify", false, "do not run the conformance kit for GET /v1/engines' verified capabilities")
	f.StringVar(&o.logFormat, "log-format", "json", "access log format on stderr: json or text")
	f.StringVar(&o.dataDir, "data-dir", "", "keep the tenants' scripts and receipts in `DIR` (default $XDG_STATE_HOME/sandbank or ~/.local/state/sandbank)")
	f.BoolVar(&o.inMemory, "in-memory", false, "keep the tenants' scripts and receipts in memory only: a restart loses them")
	f.StringVar(&o.signKey, "sign-key", "", "sign every receipt with the private key in `FILE` (default: the data directory's keys/signing.key, generated on the first start)")
	f.StringVar(&o.retiredKeys, "retired-keys", "", "publish the retired keys in `DIR` (*.pub with a Retired: header) beside the current one")
	addPackageFlag(cmd, &o.packages)
	return cmd
}

func (a *app) serve(ctx context.Context, o *serveOptions) error {
	if o.newKey {
		key, digest, err := tenant.NewKey()
		if err != nil {
			return untyped(err)
		}
		_, err = fmt.Fprintf(a.stdout, "key:    %s\ndigest: %s\n", key, digest)
		return err
	}
	var handler slog.Handler
	switch o.logFormat {
	case "json":
		handler = slog.NewJSONHandler(a.stderr, nil)
	case "text":
		handler = slog.NewTextHandler(a.stderr, nil)
	default:
		return usagef("--log-format: want json or text, not %s", quote(o.logFormat))
	}
	tenants, err := loadTenants(o)
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usagef("--addr: %s", reason(err))
	}
	if o.dev {
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return usagef("--dev serves without API keys, so only on a loopback address (127.0.0.1, ::1, localhost), not %s", quote(host))
		}
	}
	dataDir, err := serveDataDir(o)
	if err != nil {
		return err
	}
	reg, err := a.registry()
	if err != nil {
		return err
	}
	if reg, err = withPackages(reg, o.packages); err != nil { // packages.go
		return err
	}
	logger := slog.New(handler)
	// The data directory first: its lock keeps a second server from its
	// signing key as well as from its logs.
	data, err := storage.OpenData(&storage.DataOptions{Dir: dataDir, Logger: logger})
	if errors.Is(err, effect.ErrInvalidCall) {
		return usagef("%v", err)
	} else if err != nil {
		return untyped(err) // the data directory could not be opened or read
	}
	opts := &server.Options{
		Data:              data,
		Tenants:           tenants,
		MaxConcurrentRuns: o.maxRuns,
		MaxQueue:          o.queue,
		QueueTimeout:      o.queueTimeout,
		Logger:            logger,
		Version:           moduleVersion(debug.ReadBuildInfo()),
		Packages:          tenantPackages("", false), // packages.go
	}
	if err := serveSigning(o, opts); err != nil {
		_ = data.Close()
		return err
	}
	if !o.noVerify {
		opts.Verify = func(ctx context.Context, e registry.Entry) (*conformance.Report, error) {
			copts := &conformance.Options{}
			if set, ok := a.fixtures(e.Language); ok {
				copts.Fixtures = set
			}
			return conformance.Check(ctx, e.Factory, copts)
		}
	}
	srv, err := server.New(reg, opts)
	if err != nil {
		_ = data.Close()
	}
	if errors.Is(err, server.ErrInvalidOptions) {
		return usagef("%v", err)
	} else if err != nil {
		return untyped(err) // the data directory's signing key could not be read or made
	}
	ctx, stop := cancelOnSignal(ctx)
	defer stop()
	warmServer(ctx, srv, opts.Logger)
	if ctx.Err() != nil {
		_ = srv.Close()
		return signalled(ctx, ctx.Err())
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return untyped(fmt.Errorf("listening on %s: %s", quote(o.addr), reason(err)))
	}
	if o.dev {
		fmt.Fprintf(a.stderr, "sandbank: DEVELOPMENT MODE: no API keys, every caller is tenant \"dev\"; serving on loopback %s only. Do not expose this port.\n", ln.Addr())
	}
	if dataDir != "" {
		fmt.Fprintf(a.stderr, "sandbank: data directory %s\n", quote(dataDir))
	} else {
		fmt.Fprintf(a.stderr, "sandbank: scripts and receipts are kept in memory only (--in-memory)\n")
	}
	fmt.Fprintf(a.stderr, "sandbank: serving on http://%s (OpenAPI: /v1/openapi.json)\n", ln.Addr())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		_ = srv.Close()
		return untyped(err)
	case <-ctx.Done():
	}
	fmt.Fprintf(a.stderr, "sandbank: shutting down: draining runs for up to %s\n", o.drain)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drain)
	defer cancel()
	err = srv.Shutdown(dctx)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return untyped(err)
	}
	return nil
}

// serveDataDir returns serve's data directory: --data-dir, or the
// default (storage.DefaultDataDir); "" with --in-memory.
func serveDataDir(o *serveOptions) (string, error) {
	switch {
	case o.inMemory && o.dataDir != "":
		return "", usagef("--in-memory and --data-dir cannot be used together")
	case o.inMemory:
		return "", nil
	case o.dataDir != "":
		return o.dataDir, nil
	}
	d, err := storage.DefaultDataDir()
	if err != nil {
		return "", usagef("no default data directory (%s): give --data-dir DIR or --in-memory", reason(err))
	}
	return d, nil
}

// loadTenants reads the tenants for serve: none in --dev (refusing a
// document, which would be ignored), else from --tenants or the
// environment, one of which is required.
func loadTenants(o *serveOptions) (*tenant.Set, error) {
	if o.dev {
		if o.tenantsFile != "" {
			return nil, usagef("--dev and --tenants cannot be used together")
		}
		return nil, nil
	}
	s, err := readTenants(o.tenantsFile)
	switch {
	case err != nil:
		return nil, err
	case s == nil:
		return nil, usagef("no tenants: give --tenants FILE or $%s, or --dev for a loopback server without keys", tenant.EnvVar)
	}
	return s, nil
}

// readTenants reads the tenants document of serve and mcp --http: from
// file when it is not "", else from $SANDBANK_TENANTS; nil when neither
// is given.
func readTenants(file string) (*tenant.Set, error) {
	if file != "" {
		s, err := tenant.Load(file)
		if err != nil {
			return nil, usagef("--tenants: %s: %s", effect.Excerpt(file), reason(err))
		}
		return s, nil
	}
	s, ok, err := tenant.FromEnv()
	switch {
	case err != nil:
		return nil, usagef("$%s: %s", tenant.EnvVar, reason(err))
	case !ok:
		return nil, nil
	}
	return s, nil
}
