package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/tenant"
)

type mcpOptions struct {
	http            string
	memory, timeout string
	languages       []string
	engines         []string
	quiet           bool
	cacheDir        string
	noCache         bool
	packages        []string // --package NAME (packages.go)
	tenantsFile     string
	allowOrigins    []string
	signKey         string
	suspend         []string // --suspend: host functions that suspend a run (resume_run continues it)

	upstreams       []string // --upstream NAME=COMMAND or NAME=URL (mcp_upstream.go)
	upstreamAllow   []string
	upstreamEnv     []string
	upstreamHeaders []string
	upstreamTimeout string
}

func (a *app) mcpCommand() *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve the engines to agents as a Model Context Protocol server",
		Long: `mcp serves Sandbank as a Model Context Protocol (MCP) server, so an agent
can run the scripts its model writes. By default it speaks MCP on
standard input and output (register the command with your MCP client);
with --http ADDR it serves streamable HTTP on ADDR instead.

Over HTTP, callers authenticate as for 'sandbank serve': with
"Authorization: Bearer KEY" of a tenant in --tenants FILE or, without it,
in $SANDBANK_TENANTS ('sandbank serve --new-key' makes a key). Each
tenant's quotas apply: its limits ceiling, its engines, its python
packages (in place of --package), its concurrent runs and its rate. A
missing or unknown key (401) and a tenant past its rate (429, with
Retry-After) get the same problem+json answer as from
'sandbank serve'; a call past the tenant's concurrent runs is the JSON-RPC
error -32029 with data {"kind":"quota","retryable":true}, the kind
'sandbank serve' answers it with (429 quota). Without tenants, --http
serves only a loopback address (127.0.0.1:PORT, [::1]:PORT,
localhost:PORT), to anyone on this machine.
A request from a browser page of another origin than a loopback one
(http://localhost:3000) is refused with 403, against DNS rebinding,
unless --allow-origin names it; a request without a session that is not
an initialize request, with 400.

On standard input, a line that is not a JSON-RPC 2.0 message (not JSON,
not UTF-8, too long, a batch since MCP 2025-06-18) is answered with a
JSON-RPC error (-32700 or -32600) and the session goes on; at the end of
the input every request read is answered before the server exits.

The tools: run_javascript, run_typescript and run_starlark (for the
languages the registry has; --lang chooses), each taking
{"script": "<source>", "input": <any JSON>} and optional "limits"
{"timeoutMs": N, "memoryBytes": N} that may only lower the server's
(--timeout, --memory); and list_engines. A tool result carries the
script's value, or its typed failure as an error result the model can
read and correct, with the logs, the run's stats and its receipt.
--sign-key FILE (see 'sandbank keygen') signs every receipt, as for
'sandbank run' and 'sandbank serve': 'sandbank verify --key FILE.pub'
checks one; without it the receipts are unsigned.

Code mode: --upstream NAME=COMMAND starts another MCP server as a
process (over its standard input and output), --upstream
NAME=https://ADDRESS reaches one over streamable HTTP (an address on
loopback, or of an origin --upstream-allow names). Every tool T of
upstream NAME is a host function of the scripts: in JavaScript and
TypeScript 'await host.NAME__T({...})', in Starlark 'host.NAME__T({...})'
(a tool name's bytes other than letters, digits and '_' become '_'), and
the run tools' descriptions declare them in TypeScript. Every call is a
host call of the run: bounded in size and number, within the run's wall
clock and --upstream-timeout (default 30s), cancelled with the run, and
counted in its record; a failed call (the upstream died, hung, refused
or answered nonsense) is an error the script may catch.
An upstream that died (its process exited, its HTTP session was lost)
is started again by the next call: the call that found it dead fails
with upstreamUnavailable, and one that dies again before answering any
call waits 100ms before the next start, doubling up to 10s (calls in
the wait fail at once). When an upstream says its tools changed
(tools/list_changed), they are listed again: the run tools' descriptions
declare the new list, and the clients hear that the tools changed.
A command inherits sandbank's environment;
--upstream-env NAME=KEY=VALUE adds to it, and
--upstream-header 'NAME=HEADER: VALUE' (with $VARIABLES expanded) to an
address's requests; those values never reach a script (they are
redacted from every answer and error it sees).

Cancelling a call (notifications/cancelled) cancels its run; a call
with a progress token hears of its run every second while it lasts.

The engines are built and warmed in the background as the server
starts; compiled modules are cached as for run (--cache-dir, --no-cache).
One line per call (tool, engine, outcome, duration; never a script)
goes to standard error; --quiet drops them.`,
		Example: `  sandbank mcp
  sandbank mcp --timeout 10s --memory 64MiB --lang javascript
  sandbank mcp --http 127.0.0.1:8765
  sandbank mcp --sign-key host.key
  sandbank mcp --http 0.0.0.0:8765 --tenants tenants.json
  sandbank mcp --upstream 'files=npx -y @modelcontextprotocol/server-filesystem /srv/data'
  sandbank mcp --upstream gh=https://api.githubcopilot.com/mcp/ --upstream-allow https://api.githubcopilot.com \
    --upstream-header 'gh=Authorization: Bearer ${GITHUB_TOKEN}'`,
		Args: cobra.NoArgs,
		RunE: wrap(func(cmd *cobra.Command, _ []string) error {
			return a.serveMCP(cmd.Context(), &o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.http, "http", "", "serve streamable HTTP on `ADDR` instead of standard input and output (off loopback only with tenants)")
	f.StringVar(&o.tenantsFile, "tenants", "", "with --http: read the tenants document from `FILE` (default: $"+tenant.EnvVar+")")
	f.StringSliceVar(&o.allowOrigins, "allow-origin", nil, "with --http: also serve browser pages of `ORIGIN` (scheme://host[:port]); other origins than loopback ones are refused")
	f.StringVar(&o.memory, "memory", "", "memory limit `SIZE` of every run, as run's --memory (default 32MiB)")
	f.StringVar(&o.timeout, "timeout", "", "wall-clock limit `DURATION` of every run, such as 10s (default 5s)")
	f.StringSliceVar(&o.languages, "lang", nil, "serve only these `LANGUAGES` (javascript, typescript, starlark; default: every one the registry has)")
	f.StringSliceVar(&o.engines, "engine", nil, "run each `ENGINE`'s language on it instead of the language's default engine")
	f.BoolVar(&o.quiet, "quiet", false, "write no line per call on standard error")
	f.StringVar(&o.cacheDir, "cache-dir", "", "keep compiled modules in `DIR` (default: the user cache directory's sandbank/)")
	f.BoolVar(&o.noCache, "no-cache", false, "compile the engines' modules afresh, with no compiled-module cache")
	addPackageFlag(cmd, &o.packages)
	f.StringVar(&o.signKey, "sign-key", "", "sign every run's receipt with the private key in `FILE` (see 'sandbank keygen')")
	f.StringArrayVar(&o.suspend, "suspend", nil, "give the scripts a host function `NAME` that suspends the run until the resume_run tool answers it (deterministic engines; repeatable)")
	f.StringArrayVar(&o.upstreams, "upstream", nil, "make the tools of MCP server `NAME=COMMAND` (stdio) or NAME=URL (streamable HTTP) host functions of the scripts (repeatable)")
	f.StringSliceVar(&o.upstreamAllow, "upstream-allow", nil, "allow --upstream addresses of `ORIGIN` (scheme://host[:port]); loopback ones need none")
	f.StringArrayVar(&o.upstreamEnv, "upstream-env", nil, "add `NAME=KEY=VALUE` to upstream NAME's environment; the value never reaches a script")
	f.StringArrayVar(&o.upstreamHeaders, "upstream-header", nil, "send `NAME=HEADER: VALUE` ($VARIABLES expanded) with upstream NAME's requests; the value never reaches a script")
	f.StringVar(&o.upstreamTimeout, "upstream-timeout", "", "bound each upstream call by `DURATION` (default 30s; the run's wall clock bounds it too)")
	_ = cmd.RegisterFlagCompletionFunc("engine", a.completeEngines)
	_ = cmd.RegisterFlagCompletionFunc("lang", a.completeLanguages)
	return cmd
}

// serveMCP checks the flags, builds the server and serves it until the
// client goes away (stdio) or a signal stops it.
func (a *app) serveMCP(ctx context.Context, o *mcpOptions) error {
	var limits spi.Limits
	if o.memory != "" {
		n, err := parseBytes(o.memory)
		if err != nil {
			return usagef("--memory: %v", err)
		}
		limits.MemoryBytes = n
	}
	if o.timeout != "" {
		d, err := time.ParseDuration(o.timeout)
		if err != nil || d <= 0 {
			return usagef("--timeout: invalid duration %q (want a positive duration such as 10s)", o.timeout)
		}
		limits.WallClock = d
	}
	var tenants *tenant.Set
	if o.http != "" {
		var err error
		if tenants, err = readTenants(o.tenantsFile); err != nil {
			return err
		}
		if tenants == nil {
			if err := checkLoopback(o.http); err != nil {
				return err
			}
		}
	} else if o.tenantsFile != "" {
		return usagef("--tenants is for --http: a client that starts the server on standard input and output is its only caller")
	} else if len(o.allowOrigins) > 0 {
		return usagef("--allow-origin is for --http")
	}
	for _, origin := range o.allowOrigins {
		if u, err := url.Parse(origin); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return usagef("--allow-origin %q: want SCHEME://HOST[:PORT], such as https://app.example.com", origin)
		}
	}
	specs, err := parseUpstreams(o)
	if err != nil {
		return err
	}
	var signer record.Signer
	if o.signKey != "" {
		s, err := readSignKey("--sign-key", o.signKey)
		if err != nil {
			return err
		}
		signer = s
	}
	reg, err := a.registry()
	if err != nil {
		return err
	}
	engines := map[string]string{}
	for _, name := range o.engines {
		e, err := lookupEngine(reg, name)
		if err != nil {
			return err
		}
		if prev, ok := engines[e.Language]; ok {
			return usagef("--engine: both %s and %s run %s; choose one", prev, name, e.Language)
		}
		engines[e.Language] = name
	}
	if o.noCache && o.cacheDir != "" {
		return usagef("--cache-dir and --no-cache cannot be used together")
	}
	var factoryErr error
	opts := &mcpserver.Options{
		Limits:    limits,
		Languages: o.languages,
		Engines:   engines,
		Version:   moduleVersion(debug.ReadBuildInfo()),
		Signer:    signer,
		Suspend:   o.suspend,
		Packages:  tenantPackages(o.cacheDir, o.noCache), // packages.go
		Factory: func(e registry.Entry) spi.Factory {
			f, err := a.engineFactory(e, &runOptions{cacheDir: o.cacheDir, noCache: o.noCache, packages: o.packages})
			if err != nil {
				factoryErr = err
				return nil
			}
			return f
		},
	}
	if !o.quiet {
		opts.Logger = slog.New(slog.NewTextHandler(a.stderr, nil))
	}
	if tenants != nil {
		opts.Admit = admitTenant
	}
	if len(specs) > 0 {
		host, closeUpstreams, err := a.connectUpstreams(ctx, specs, o, opts.Logger)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := closeUpstreams(); cerr != nil && opts.Logger != nil {
				opts.Logger.Warn("sandbank: closing the upstreams", slog.String("error", oneLine(cerr.Error())))
			}
		}()
		opts.Host = host
	}
	srv, err := mcpserver.New(reg, opts)
	switch {
	case factoryErr != nil:
		return factoryErr
	case err != nil:
		return usagef("%v", err)
	}
	defer srv.Close()

	ctx, stop := cancelOnSignal(ctx)
	defer stop()
	// The first call would build its engine; building and warming them
	// before the server reads its first message (or reports that it
	// listens) makes that call fast. A failure here is retried by it.
	start := time.Now()
	switch err := srv.Warm(ctx); {
	case ctx.Err() != nil:
		return signalled(ctx, ctx.Err())
	case err == nil:
		if opts.Logger != nil {
			opts.Logger.Info("sandbank: engines warmed", slog.Duration("duration", time.Since(start)))
		}
	case opts.Logger != nil:
		opts.Logger.Warn("sandbank: warming the engines", slog.String("error", oneLine(err.Error())))
	}
	if o.http != "" {
		return a.serveMCPHTTP(ctx, srv, o, tenants)
	}
	// A bad line is answered and the session goes on; at the end of
	// the input, every request read is answered before the server ends.
	t := &mcpserver.StreamTransport{Reader: a.stdin, Writer: a.stdout, MaxMessageBytes: srv.MaxMessageBytes()}
	err = srv.MCP().Run(ctx, t)
	switch {
	case ctx.Err() != nil:
		return signalled(ctx, ctx.Err())
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, mcp.ErrConnectionClosed):
		return nil // the client closed the connection: done
	default:
		return untyped(fmt.Errorf("mcp: %w", err))
	}
}

// serveMCPHTTP serves streamable HTTP on addr until ctx is done.
// With tenants, every request needs a tenant's key, and takes a token
// from its rate limit.
func (a *app) serveMCPHTTP(ctx context.Context, srv *mcpserver.Server, o *mcpOptions, tenants *tenant.Set) error {
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return usagef("--http: %v", err)
	}
	hs := &http.Server{
		Handler:           srv.HTTPHandler(mcpHTTPOptions(o, tenants)),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintf(a.stderr, "sandbank: serving MCP (streamable HTTP) on http://%s/\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return untyped(fmt.Errorf("mcp: %w", err))
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	return signalled(ctx, ctx.Err())
}

// mcpHTTPOptions are the options of the MCP server's HTTP handler: with
// tenants, every request passes the tenant admission (requireTenant).
func mcpHTTPOptions(o *mcpOptions, tenants *tenant.Set) *mcpserver.HTTPOptions {
	hopts := &mcpserver.HTTPOptions{AllowedOrigins: o.allowOrigins}
	if tenants != nil {
		hopts.Authenticate = func(next http.Handler) http.Handler { return requireTenant(tenants, next) }
	}
	return hopts
}

// checkLoopback refuses an --http address that is not on loopback: a
// server without tenants has no API keys, and must not serve beyond this
// machine.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--http %q: want HOST:PORT, such as 127.0.0.1:8765", addr)
	}
	refuse := usagef("--http %s is not a loopback address: serving MCP beyond this machine needs API keys (--tenants FILE or $%s, as for 'sandbank serve'); or serve on 127.0.0.1:PORT or [::1]:PORT", addr, tenant.EnvVar)
	if host == "localhost" {
		ips, err := net.DefaultResolver.LookupIPAddr(context.Background(), host)
		if err != nil || len(ips) == 0 {
			return refuse
		}
		for _, ip := range ips {
			if !ip.IP.IsLoopback() {
				return refuse
			}
		}
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return refuse
}
