package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// DefaultProgressInterval is how often a run that asked for progress
// hears of it: the first notification comes when the run has lasted this
// long, so a run shorter than a second sends none.
const DefaultProgressInterval = time.Second

// ErrInvalidOptions is matched by every error New returns for options it
// refuses (an unknown language or engine, negative limits, an engine that
// declares network access or reuses its environment). It matches
// effect.ErrInvalidCall too: the caller's own mistake, not retryable.
var ErrInvalidOptions = fmt.Errorf("mcpserver: invalid options: %w", effect.ErrInvalidCall)

// Options configure a Server. A nil *Options means defaults.
type Options struct {
	// Limits is the ceiling of every run, and the limits of a call that
	// sets none: a call's own limits may only lower them. A zero
	// WallClock means effect.DefaultWallClock (5 s); a zero MemoryBytes,
	// effect.DefaultMemoryBytes (32 MiB). Negative values are refused.
	Limits spi.Limits
	// MaxInputBytes, MaxOutputBytes and MaxScriptBytes bound a call's
	// input, its result and its script, as effect.Options do. Zero means
	// the effect's defaults (32 MiB, 4 MiB, 16 MiB).
	MaxInputBytes, MaxOutputBytes, MaxScriptBytes int64
	// Languages are the languages to serve, each as its run_LANGUAGE tool,
	// of "javascript", "typescript", "starlark" and "python". Nil means every one of
	// them the registry has. A language the registry lacks is refused.
	Languages []string
	// Engines chooses the engine of a language by name
	// ({"javascript": "goja"}). A language not named here runs its
	// registry default, or, for a call whose Admission restricts its
	// engines, the first of them that runs the language
	// (pool.Pool.Resolve, the policy of every door).
	Engines map[string]string
	// Factory, when not nil, returns the factory a served engine's backend
	// is built with (the command line passes one that keeps compiled
	// modules in its cache). Nil, or a nil result, means the entry's own.
	Factory func(registry.Entry) spi.Factory
	// Packages builds an engine whose scripts may import exactly a
	// caller's packages (Admission.Packages), as pool.Options.Packages
	// does: the command line passes builtin.PackagesFactory. Nil means
	// none, and a call admitted with packages is refused.
	Packages func(e registry.Entry, packages []string) spi.Factory
	// ProgressInterval is how often a call that carries a progress token
	// hears how long its run has lasted. Zero means
	// DefaultProgressInterval; it must be >= 0.
	ProgressInterval time.Duration
	// Logger, when not nil, receives one record per tool call (its tool,
	// engine, outcome and duration), never a script's source or logs.
	Logger *slog.Logger
	// Version is the server's version as it tells clients. Empty means
	// "(devel)".
	Version string
	// Admit, when not nil, is asked before every run whether the call may
	// run, on which engines, and within which limits: it is where a
	// transport's authentication (req.Extra.TokenInfo) becomes quotas.
	// engine is the tool's engine, the one a call runs when its Admission
	// restricts no engine. An error that
	// matches effect.ErrInvalidCall (an engine the caller may not use)
	// answers the call with an error result saying so; one that matches
	// effect.ErrQuota (a caller at its cap of concurrent runs) is the
	// protocol error CodeQuota, retryable later; any other error is a
	// protocol error, and retryable. Nil admits every call within the
	// server's limits.
	Admit func(ctx context.Context, req *mcp.CallToolRequest, engine string) (Admission, error)
	// MaxHostCalls, MaxHostArgBytes and MaxHostResultBytes bound the
	// host calls of a run (Options.Host), as effect.Options do: the calls per run,
	// one call's argument and one answer as JSON text. Zero means the
	// effect's defaults (1000, 1 MiB, 4 MiB); negative values are
	// refused.
	MaxHostCalls                        int
	MaxHostArgBytes, MaxHostResultBytes int64
	// Host, when not nil, gives every run on an engine that declares
	// host calls its host functions, and the run tools' descriptions say
	// what they are (code mode: package codemode's Host, the tools of
	// other MCP servers). When its descriptions change (Host.Watch), the
	// run tools are declared again (the server's clients hear
	// notifications/tools/list_changed). Nil means none. The server does
	// not close it.
	Host Host
	// Signer, when not nil, signs the receipt of every run (as
	// effect.Options.Signer does): the receipt a run tool returns then
	// verifies with the signer's public key ('sandbank verify --key').
	// Nil means unsigned receipts.
	Signer record.Signer
	// Receipts, when not nil, keeps the receipt of every run answered
	// with its record (a value or a typed failure), under a new run id
	// (storage.NewRunID) that the result carries as Result.Run; a receipt
	// that cannot be kept makes the call a retryable protocol error, not
	// a result, as an HTTP run is a 503. The server does not close it.
	// Nil keeps none, and results carry no run id.
	Receipts storage.ReceiptStore
	// Suspend names host functions that suspend a run (docs/design.md,
	// "Durable runs"): on an engine that declares deterministic, a script
	// that calls one ends suspended, its result says what it waits for
	// (Result.Waiting), and the resume_run tool continues it with the
	// answer. Engines that do not declare deterministic run without them.
	// Nil means none, and no resume_run tool.
	Suspend []string
	// Continuations keeps the suspended runs until resume_run resumes
	// them, each owned by the Admission.Tenant of the call that ran it.
	// Nil means a storage.MemoryContinuations with its defaults. The
	// server does not close it.
	Continuations storage.ContinuationStore
}

// Admission is what Options.Admit grants one call.
type Admission struct {
	// Engines are the engines the caller may use; empty means all. A call
	// runs the tool's engine when it is among them (or the server chose
	// none for the language: the first of them that runs the tool's
	// language; see pool.Pool.Resolve), and is refused otherwise.
	Engines []string
	// Limits is the caller's ceiling, below the server's: a zero field, or
	// one above the server's, means the server's. A call's own limits may
	// only lower it, and a call that sets none runs with it.
	Limits spi.Limits
	// Release, when not nil, is called once when the call ends.
	Release func()
	// Tenant names the caller: a run it suspends is resumed by a call
	// admitted with the same Tenant only (another's run is unknown).
	// Empty means the one caller of a server without tenants.
	Tenant string
	// Packages are the python packages the caller's runs may import
	// (tenant.Tenant.Packages; see Options.Packages). Empty means the
	// engine's own.
	Packages []string
}

// Server is a Model Context Protocol server that runs scripts through the
// effect. Build it with [New], serve [Server.MCP] on a transport, and
// [Server.Close] it when done. It is safe for concurrent use.
type Server struct {
	server   *mcp.Server
	pool     *pool.Pool
	tools    []*runTool // sorted by language
	limits   limits
	progress time.Duration
	logger   *slog.Logger
	admit    func(context.Context, *mcp.CallToolRequest, string) (Admission, error)
	receipts storage.ReceiptStore // nil: none kept
	// suspend, continuations and keys serve durable runs (durable.go):
	// the host functions that suspend, where the suspended runs are
	// kept, and the keys their continuations must be signed by (nil
	// without a Signer).
	suspend       []string
	continuations storage.ContinuationStore
	keys          *receipt.KeySet
	// host gives the runs their host functions (host.go); nil without.
	host    Host
	refresh sync.Mutex // one declaration of the tools at a time; closed
	closed  bool
	unwatch func() // stops watching host; nil without
}

// limits are the server's limits, defaults resolved.
type limits struct {
	wallClock                      time.Duration
	memoryBytes                    int64
	maxInput, maxOutput, maxScript int64
}

// toolLanguages are the languages the server can offer a tool for,
// sorted.
var toolLanguages = []string{"javascript", "python", "starlark", "typescript"}

// New returns a Server whose tools run scripts on the engines of reg. It
// checks the options and chooses each language's engine, but builds no
// backend: each engine's backend is built on the first call of its tool,
// and a build that failed is tried again on the next call. Every refusal
// matches ErrInvalidOptions.
func New(reg *registry.Registry, opts *Options) (*Server, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil registry", ErrInvalidOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	lim, err := resolveLimits(&o)
	if err != nil {
		return nil, err
	}
	if o.ProgressInterval < 0 {
		return nil, fmt.Errorf("%w: negative ProgressInterval", ErrInvalidOptions)
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	langs, err := chooseLanguages(reg, &o)
	if err != nil {
		return nil, err
	}
	p, err := pool.New(reg, &pool.Options{Factory: o.Factory, Packages: o.Packages, Effect: effect.Options{
		Limits:         o.Limits,
		MaxInputBytes:  lim.maxInput,
		MaxOutputBytes: lim.maxOutput,
		MaxScriptBytes: lim.maxScript,

		MaxHostCalls:       o.MaxHostCalls,
		MaxHostArgBytes:    o.MaxHostArgBytes,
		MaxHostResultBytes: o.MaxHostResultBytes,

		Signer: o.Signer,
	}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	ceiling := p.Ceiling()
	lim.wallClock, lim.memoryBytes = ceiling.WallClock, ceiling.MemoryBytes
	s := &Server{pool: p, limits: lim, progress: o.ProgressInterval, logger: o.Logger, admit: o.Admit, host: o.Host, receipts: o.Receipts}
	if err := s.durableOptions(&o); err != nil {
		return nil, err
	}
	for _, lang := range langs {
		entry, err := chooseEngine(p, lang, o.Engines[lang])
		if err != nil {
			return nil, err
		}
		s.tools = append(s.tools, &runTool{s: s, name: "run_" + lang, lang: lang, entry: entry, chosen: o.Engines[lang]})
	}
	version := o.Version
	if version == "" {
		version = "(devel)"
	}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "sandbank", Title: "Sandbank", Version: version}, &mcp.ServerOptions{
		Instructions: instructions(s.tools, s.host),
		// The SDK's own records (sessions starting and ending) are not
		// the server's to report.
		Logger: slog.New(slog.DiscardHandler),
	})
	for _, t := range s.tools {
		s.server.AddTool(t.definition(), t.handle)
	}
	s.server.AddTool(listEnginesDefinition(), s.listEngines)
	if len(s.suspend) > 0 {
		s.server.AddTool(resumeRunDefinition(), s.resumeRun)
	}
	s.watchHost()
	return s, nil
}

// ceiling returns l's limits of a run.
func (l limits) ceiling() spi.Limits {
	return spi.Limits{WallClock: l.wallClock, MemoryBytes: l.memoryBytes}
}

// lower returns l lowered by an admission's limits (pool.Lower).
func (l limits) lower(c spi.Limits) limits {
	lowered := pool.Lower(l.ceiling(), c)
	l.wallClock, l.memoryBytes = lowered.WallClock, lowered.MemoryBytes
	return l
}

func resolveLimits(o *Options) (limits, error) {
	switch {
	case o.Limits.WallClock < 0, o.Limits.MemoryBytes < 0:
		return limits{}, fmt.Errorf("%w: negative limits", ErrInvalidOptions)
	case o.MaxInputBytes < 0, o.MaxOutputBytes < 0, o.MaxScriptBytes < 0,
		o.MaxHostCalls < 0, o.MaxHostArgBytes < 0, o.MaxHostResultBytes < 0:
		return limits{}, fmt.Errorf("%w: negative size bound", ErrInvalidOptions)
	}
	// The wall clock and memory are the pool's ceiling (New).
	l := limits{maxInput: o.MaxInputBytes, maxOutput: o.MaxOutputBytes, maxScript: o.MaxScriptBytes}
	if l.maxInput == 0 {
		l.maxInput = effect.DefaultMaxInputBytes
	}
	if l.maxOutput == 0 {
		l.maxOutput = effect.DefaultMaxOutputBytes
	}
	if l.maxScript == 0 {
		l.maxScript = effect.DefaultMaxScriptBytes
	}
	return l, nil
}

// chooseLanguages returns the languages to serve, sorted.
func chooseLanguages(reg *registry.Registry, o *Options) ([]string, error) {
	have := reg.Languages()
	if o.Languages == nil {
		var out []string
		for _, l := range toolLanguages {
			if slices.Contains(have, l) {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: the registry has none of the languages %s", ErrInvalidOptions, strings.Join(toolLanguages, ", "))
		}
		return out, checkEngineLanguages(o.Engines, out)
	}
	var out []string
	for _, l := range o.Languages {
		switch {
		case !slices.Contains(toolLanguages, l):
			return nil, fmt.Errorf("%w: language %q has no tool (languages: %s)", ErrInvalidOptions, l, strings.Join(toolLanguages, ", "))
		case !slices.Contains(have, l):
			return nil, fmt.Errorf("%w: the registry has no %s engine (languages: %s)", ErrInvalidOptions, l, strings.Join(have, ", "))
		case !slices.Contains(out, l):
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no language to serve", ErrInvalidOptions)
	}
	sort.Strings(out)
	return out, checkEngineLanguages(o.Engines, out)
}

// checkEngineLanguages refuses an engine chosen for a language that is
// not served.
func checkEngineLanguages(engines map[string]string, served []string) error {
	for l, e := range engines {
		if !slices.Contains(served, l) {
			return fmt.Errorf("%w: engine %s is chosen for %s, which is not served (served: %s)", ErrInvalidOptions, e, l, strings.Join(served, ", "))
		}
	}
	return nil
}

// chooseEngine returns the engine of lang's tool: name, or the
// language's default (pool.Pool.Resolve). An engine that declares network
// access or reuses its environment is refused: the effect would refuse it
// too, and a tool a model is handed must keep the project's guarantees.
func chooseEngine(p *pool.Pool, lang, name string) (registry.Entry, error) {
	e, err := p.Resolve(name, lang)
	if err != nil {
		return registry.Entry{}, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	switch {
	case e.Capabilities.Network != spi.NetworkNone:
		return registry.Entry{}, fmt.Errorf("%w: engine %s declares network %s", ErrInvalidOptions, e.Engine, e.Capabilities.Network)
	case !e.Capabilities.FreshPerRun:
		return registry.Entry{}, fmt.Errorf("%w: engine %s reuses its environment between runs", ErrInvalidOptions, e.Engine)
	}
	return e, nil
}

// MCP returns the server to run on a transport: [mcp.Server.Run] with a
// [StreamTransport] (the SDK's own stdio transports end the session on
// the first malformed line), or streamable HTTP through
// [Server.HTTPHandler].
func (s *Server) MCP() *mcp.Server { return s.server }

// Tools returns the names of the server's tools, in the order it lists
// them.
func (s *Server) Tools() []string {
	var names []string
	for _, t := range s.tools {
		names = append(names, t.name)
	}
	names = append(names, listEnginesName)
	if len(s.suspend) > 0 {
		names = append(names, resumeRunName)
	}
	return names
}

// Warm builds every served engine's backend now, and warms it, instead of
// on its tool's first call (pool.Pool.Warm). It returns every engine's
// error; a tool whose build failed tries again on its next call.
func (s *Server) Warm(ctx context.Context) error {
	var engines []string
	for _, t := range s.tools {
		engines = append(engines, t.entry.Engine)
	}
	if err := s.pool.Warm(ctx, engines...); err != nil {
		return fmt.Errorf("mcpserver: %w", err)
	}
	return nil
}

// Close closes every backend the server built. Calls after Close are
// answered with a protocol error. It is idempotent.
func (s *Server) Close() error {
	s.refresh.Lock()
	if s.unwatch != nil {
		s.unwatch()
	}
	s.closed = true
	s.refresh.Unlock()
	return s.pool.Close()
}

// MaxMessageBytes is the largest message a transport needs to accept for
// the server's bounds: a call carrying the largest script and input it
// runs, each escaped in JSON at up to twice its size, plus 1 MiB for the
// rest. A transport should refuse larger messages ([StreamTransport]'s
// MaxLineLength, an HTTP body limit) rather than read them.
func (s *Server) MaxMessageBytes() int64 {
	return 2*(s.limits.maxInput+s.limits.maxScript) + 1<<20
}
