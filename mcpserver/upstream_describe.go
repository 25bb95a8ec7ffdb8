package mcpserver

import (
	"strings"

	"github.com/sandbank/sandbank/spi"
)

// This file tells the model about the upstream tools: a section of each
// run tool's description (how a script of its language calls them, what
// a call answers and how it fails, and their TypeScript declarations) and
// a sentence of the server's instructions.

// upstreamCalls says, per language, how a script calls an upstream tool.
var upstreamCalls = map[string]string{
	"javascript": "Each is a function of the global `host` taking one object and returning a promise of the tool's answer. Issue many calls and await them together, then reshape what they return, e.g. `const [a, b] = await Promise.all([host.NAME__TOOL({ q: 1 }), host.NAME__OTHER({})]);`. A failed call rejects with an Error the script may catch.",
	"typescript": "Each is a function of the global `host` taking one object and returning a promise of the tool's answer. Issue many calls and await them together, then reshape what they return, e.g. `const [a, b] = await Promise.all([host.NAME__TOOL({ q: 1 }), host.NAME__OTHER({})]);`. A failed call rejects with an Error the script may catch.",
	"starlark":   "Each is a function of the global `host` taking one dict and returning the tool's answer: `rows = host.NAME__TOOL({\"q\": 1})`. A failed call stops the script; `host_try(\"NAME__TOOL\", {\"q\": 1})` returns `(answer, None)` or `(None, message)` instead.",
}

// upstreamSection is the part of a run tool's description about the
// upstream tools; empty without upstreams.
func (s *Server) upstreamSection(lang string, caps spi.Capabilities) string {
	if len(s.upstreams) == 0 {
		return ""
	}
	if !caps.HostCalls {
		return "\n\nThis engine cannot call the upstream tools (it declares no host calls)."
	}
	var b strings.Builder
	b.WriteString("\n\nUpstream tools (code mode): the script may call the tools of other MCP servers, the only way out of the sandbox. ")
	b.WriteString(upstreamCalls[lang])
	b.WriteString(" A tool's answer is its structured content when it has some, else its text (a string: parse it if it is JSON). ")
	b.WriteString("A failure's message starts with \"mcpserver: CODE:\", CODE one of upstreamUnavailable, upstreamTimeout, upstreamMalformed, upstreamRefused, upstreamToolError, upstreamInvalidArguments, upstreamTooLarge. ")
	b.WriteString("Every call counts toward the run's wall clock and its number of host calls, and its argument and answer are bounded in size. The tools, declared in TypeScript:\n")
	b.WriteString(s.declarations())
	return b.String()
}

// upstreamInstructions is the sentence of the server's instructions about
// the upstream tools.
func upstreamInstructions(ups []*Upstream) string {
	if len(ups) == 0 {
		return ""
	}
	var names []string
	for _, u := range ups {
		names = append(names, u.name)
	}
	return " The scripts may also call the tools of the MCP servers " + strings.Join(names, ", ") +
		" (as host.NAME__TOOL, declared in each run tool's description): prefer one script that calls many tools and returns only what you need over many tool calls."
}
