package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
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
	// of "javascript", "typescript" and "starlark". Nil means every one of
	// them the registry has. A language the registry lacks is refused.
	Languages []string
	// Engines chooses the engine of a language by name
	// ({"javascript": "goja"}). A language not named here runs the engine
	// [Requirements] selects: its registry default when that bounds memory
	// and preempts, else the first engine of the language (by name) that
	// does, else its default.
	Engines map[string]string
	// Factory, when not nil, returns the factory a served engine's backend
	// is built with (the command line passes one that keeps compiled
	// modules in its cache). Nil, or a nil result, means the entry's own.
	Factory func(registry.Entry) spi.Factory
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
	// run, and within which limits: it is where a transport's
	// authentication (req.Extra.TokenInfo) becomes quotas. An error that
	// matches effect.ErrInvalidCall (an engine the caller may not use)
	// answers the call with an error result saying so; any other error (a
	// caller at its cap of concurrent runs) is a protocol error, and
	// retryable. Nil admits every call within the server's limits.
	Admit func(ctx context.Context, req *mcp.CallToolRequest, engine string) (Admission, error)
}

// Admission is what Options.Admit grants one call.
type Admission struct {
	// Limits is the caller's ceiling, below the server's: a zero field, or
	// one above the server's, means the server's. A call's own limits may
	// only lower it, and a call that sets none runs with it.
	Limits spi.Limits
	// Release, when not nil, is called once when the call ends.
	Release func()
}

// Server is a Model Context Protocol server that runs scripts through the
// effect. Build it with [New], serve [Server.MCP] on a transport, and
// [Server.Close] it when done. It is safe for concurrent use.
type Server struct {
	server   *mcp.Server
	tools    []*runTool // sorted by language
	limits   limits
	progress time.Duration
	logger   *slog.Logger
	admit    func(context.Context, *mcp.CallToolRequest, string) (Admission, error)

	closeOnce sync.Once
	closeErr  error
}

// limits are the server's limits, defaults resolved.
type limits struct {
	wallClock                      time.Duration
	memoryBytes                    int64
	maxInput, maxOutput, maxScript int64
}

// toolLanguages are the languages the server can offer a tool for,
// sorted.
var toolLanguages = []string{"javascript", "starlark", "typescript"}

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
	s := &Server{limits: lim, progress: o.ProgressInterval, logger: o.Logger, admit: o.Admit}
	for _, lang := range langs {
		entry, err := chooseEngine(reg, lang, o.Engines[lang])
		if err != nil {
			return nil, err
		}
		s.tools = append(s.tools, newRunTool(s, entry, &o))
	}
	version := o.Version
	if version == "" {
		version = "(devel)"
	}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "sandbank", Title: "Sandbank", Version: version}, &mcp.ServerOptions{
		Instructions: instructions(s.tools),
		// The SDK's own records (sessions starting and ending) are not
		// the server's to report.
		Logger: slog.New(slog.DiscardHandler),
	})
	for _, t := range s.tools {
		s.server.AddTool(t.definition(), t.handle)
	}
	s.server.AddTool(listEnginesDefinition(), s.listEngines)
	return s, nil
}

// lower returns l with the positive fields of c that are below l's.
func (l limits) lower(c spi.Limits) limits {
	if c.WallClock > 0 && c.WallClock < l.wallClock {
		l.wallClock = c.WallClock
	}
	if c.MemoryBytes > 0 && c.MemoryBytes < l.memoryBytes {
		l.memoryBytes = c.MemoryBytes
	}
	return l
}

func resolveLimits(o *Options) (limits, error) {
	switch {
	case o.Limits.WallClock < 0, o.Limits.MemoryBytes < 0:
		return limits{}, fmt.Errorf("%w: negative limits", ErrInvalidOptions)
	case o.MaxInputBytes < 0, o.MaxOutputBytes < 0, o.MaxScriptBytes < 0:
		return limits{}, fmt.Errorf("%w: negative size bound", ErrInvalidOptions)
	}
	l := limits{
		wallClock: o.Limits.WallClock, memoryBytes: o.Limits.MemoryBytes,
		maxInput: o.MaxInputBytes, maxOutput: o.MaxOutputBytes, maxScript: o.MaxScriptBytes,
	}
	if l.wallClock == 0 {
		l.wallClock = effect.DefaultWallClock
	}
	if l.memoryBytes == 0 {
		l.memoryBytes = effect.DefaultMemoryBytes
	}
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

// requirements are what the server looks for in the engine of a language
// nobody chose one for: a model's scripts are hostile until shown
// otherwise, so an engine that bounds memory and preempts a running script
// is preferred to a default that does neither.
var requirements = registry.Requirements{
	Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, FreshPerRun: true,
}

// chooseEngine returns the engine of lang: name, or the one requirements
// select, or the language's default. An engine that declares network
// access or reuses its environment is refused: the effect would refuse it
// too, and a tool a model is handed must keep the project's guarantees.
func chooseEngine(reg *registry.Registry, lang, name string) (registry.Entry, error) {
	var e registry.Entry
	var err error
	if name == "" {
		e, err = reg.Select(lang, requirements)
		if errors.Is(err, registry.ErrNoMatch) {
			e, err = reg.Default(lang)
		}
	} else {
		e, err = reg.Lookup(name)
	}
	if err != nil {
		return registry.Entry{}, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	switch {
	case e.Language != lang:
		return registry.Entry{}, fmt.Errorf("%w: engine %s runs %s, not %s", ErrInvalidOptions, e.Engine, e.Language, lang)
	case e.Capabilities.Network != spi.NetworkNone:
		return registry.Entry{}, fmt.Errorf("%w: engine %s declares network %s", ErrInvalidOptions, e.Engine, e.Capabilities.Network)
	case !e.Capabilities.FreshPerRun:
		return registry.Entry{}, fmt.Errorf("%w: engine %s reuses its environment between runs", ErrInvalidOptions, e.Engine)
	case e.Factory == nil:
		return registry.Entry{}, fmt.Errorf("%w: engine %s has no factory", ErrInvalidOptions, e.Engine)
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
	return append(names, listEnginesName)
}

// Warm builds every served engine's backend now, and warms it, instead of
// on its tool's first call. It returns the first error; a tool whose build
// failed tries again on its next call.
func (s *Server) Warm(ctx context.Context) error {
	var errs []error
	for _, t := range s.tools {
		eff, err := t.effect()
		if err == nil {
			err = eff.Warm(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("mcpserver: engine %s: %w", t.entry.Engine, err))
		}
	}
	return errors.Join(errs...)
}

// Close closes every backend the server built. Calls after Close are
// answered with a protocol error. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, t := range s.tools {
			if err := t.close(); err != nil {
				errs = append(errs, fmt.Errorf("mcpserver: engine %s: %w", t.entry.Engine, err))
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// MaxMessageBytes is the largest message a transport needs to accept for
// the server's bounds: a call carrying the largest script and input it
// runs, each escaped in JSON at up to twice its size, plus 1 MiB for the
// rest. A transport should refuse larger messages ([StreamTransport]'s
// MaxLineLength, an HTTP body limit) rather than read them.
func (s *Server) MaxMessageBytes() int64 {
	return 2*(s.limits.maxInput+s.limits.maxScript) + 1<<20
}
