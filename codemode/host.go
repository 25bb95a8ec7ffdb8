package codemode

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sandbank/sandbank/effect"
)

// This file is the upstreams as a server serves them: their tools as the
// host functions of every run, declared in the run tools' descriptions,
// and both brought up to date when an upstream's tools change.

// Host is upstreams served together: their tools are the host functions
// of every run, and a run tool's description declares them. It is what
// package mcpserver takes as Options.Host (an mcpserver.Host). Build it
// with [NewHost]; it is safe for concurrent use.
type Host struct {
	ups  []*Upstream // sorted by name
	code atomic.Pointer[gathered]

	mu       sync.Mutex // one gathering at a time; watchers
	watchers map[int]func()
	nextID   int
}

// gathered is the upstreams' tools at one time.
type gathered struct {
	host         effect.HostFuncs
	declarations string // in TypeScript (decl.go)
}

// NewHost returns the upstreams ups served together. Their names must
// differ (so do their host functions': NAME__TOOL, NAME without "__");
// refusals match ErrInvalidUpstream. The Host follows their tools: when
// one's change (ConnectUpstream), the runs that start after have the new
// list, and its watchers hear of it ([Host.Watch]). It does not close
// them.
func NewHost(ups ...*Upstream) (*Host, error) {
	h := &Host{ups: slices.Clone(ups), watchers: map[int]func(){}}
	for _, u := range h.ups {
		if u == nil {
			return nil, fmt.Errorf("%w: a nil upstream", ErrInvalidUpstream)
		}
	}
	slices.SortFunc(h.ups, func(a, b *Upstream) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(h.ups); i++ {
		if h.ups[i].name == h.ups[i-1].name {
			return nil, fmt.Errorf("%w: two upstreams are named %s", ErrInvalidUpstream, h.ups[i].name)
		}
	}
	h.code.Store(gather(h.ups))
	for _, u := range h.ups {
		u.watch(h.refresh)
	}
	return h, nil
}

// gather returns the tools of ups, whose names differ.
func gather(ups []*Upstream) *gathered {
	c := &gathered{host: effect.HostFuncs{}, declarations: declarations(ups)}
	for _, u := range ups {
		for name, fn := range u.HostFuncs() {
			c.host[name] = fn
		}
	}
	return c
}

// HostFuncs returns the upstreams' tools as host functions (see
// [Upstream.HostFuncs]), for a run that starts now.
func (h *Host) HostFuncs() effect.HostFuncs { return h.code.Load().host }

// upstreamCalls says, per language, how a script calls an upstream tool.
var upstreamCalls = map[string]string{
	"javascript": "Each is a function of the global `host` taking one object and returning a promise of the tool's answer. Issue many calls and await them together, then reshape what they return, e.g. `const [a, b] = await Promise.all([host.NAME__TOOL({ q: 1 }), host.NAME__OTHER({})]);`. A failed call rejects with an Error the script may catch.",
	"typescript": "Each is a function of the global `host` taking one object and returning a promise of the tool's answer. Issue many calls and await them together, then reshape what they return, e.g. `const [a, b] = await Promise.all([host.NAME__TOOL({ q: 1 }), host.NAME__OTHER({})]);`. A failed call rejects with an Error the script may catch.",
	"starlark":   "Each is a function of the global `host` taking one dict and returning the tool's answer: `rows = host.NAME__TOOL({\"q\": 1})`. A failed call stops the script; `host_try(\"NAME__TOOL\", {\"q\": 1})` returns `(answer, None)` or `(None, message)` instead.",
}

// Describe returns what a run tool's description says of the upstream
// tools to a script of lang ("javascript", "typescript", "starlark", …)
// on an engine that declares host calls: how it calls them, what a call
// answers and how it fails, and their TypeScript declarations (within
// MaxUpstreamDeclarationBytes).
func (h *Host) Describe(lang string) string {
	var b strings.Builder
	b.WriteString("Upstream tools (code mode): the script may call the tools of other MCP servers, the only way out of the sandbox. ")
	b.WriteString(upstreamCalls[lang])
	b.WriteString(" A tool's answer is its structured content when it has some, else its text (a string: parse it if it is JSON). ")
	b.WriteString("A failure's message starts with \"" + errorPrefix + "CODE:\", CODE one of upstreamUnavailable, upstreamTimeout, upstreamMalformed, upstreamRefused, upstreamToolError, upstreamInvalidArguments, upstreamTooLarge. ")
	b.WriteString("Every call counts toward the run's wall clock and its number of host calls, and its argument and answer are bounded in size. The tools, declared in TypeScript:\n")
	b.WriteString(h.code.Load().declarations)
	return b.String()
}

// Instructions returns the sentence of a server's instructions about the
// upstream tools; empty without upstreams.
func (h *Host) Instructions() string {
	if len(h.ups) == 0 {
		return ""
	}
	var names []string
	for _, u := range h.ups {
		names = append(names, u.name)
	}
	return "The scripts may also call the tools of the MCP servers " + strings.Join(names, ", ") +
		" (as host.NAME__TOOL, declared in each run tool's description): prefer one script that calls many tools and returns only what you need over many tool calls."
}

// Watch calls changed each time the upstreams' declarations change (one's
// tools changed, so Describe says something new), until stop is called.
// changed is called with no lock of the Host held.
func (h *Host) Watch(changed func()) (stop func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	id := h.nextID
	h.watchers[id] = changed
	return func() {
		h.mu.Lock()
		delete(h.watchers, id)
		h.mu.Unlock()
	}
}

// refresh gathers the upstreams' tools again, after one's changed, and
// tells the watchers when the declarations changed.
func (h *Host) refresh() {
	h.mu.Lock()
	c := gather(h.ups)
	old := h.code.Swap(c)
	var fs []func()
	if old.declarations != c.declarations {
		for _, f := range h.watchers {
			fs = append(fs, f)
		}
	}
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}
