// Package codemode is code mode: the tools of other MCP servers (its
// upstreams) become host functions of the scripts Sandbank runs, so that
// one script calls many tools at once and reshapes what they return.
//
// [NewUpstream] and [ConnectUpstream] turn the tools of an MCP server,
// reached through a client session, into host functions
// (effect.HostFuncs): tool T of upstream NAME is host.NAME__T in every
// language (`await host.github__search_issues({query})` in JavaScript and
// TypeScript, host.github__search_issues({"query": q}) in Starlark).
// [NewHost] serves upstreams together: it is an mcpserver.Host, given to
// an MCP server as mcpserver.Options.Host, whose run tools then declare
// the tools in TypeScript from their JSON Schemas (within
// MaxUpstreamDeclarationBytes). Its [Upstream.HostFuncs] work on any
// effect.
//
// Every call is a host call: its argument, its answer and the calls of a
// run are bounded by the effect (effect.Options.MaxHostArgBytes,
// MaxHostResultBytes, MaxHostCalls); it lasts at most
// UpstreamOptions.CallTimeout and never past its run, is cancelled with
// the run, and is counted in the run's record. A failure is an
// [UpstreamError] the script catches, its message "mcpserver: CODE: …"
// ([UpstreamCode]); none makes the run retryable.
//
// [ConnectUpstream] starts the upstream itself: it starts it again,
// within a backoff, when it dies, and lists its tools again on
// tools/list_changed. It bounds every message its upstream sends, on
// every transport, before buffering it (MaxUpstreamMessageBytes: past it,
// upstreamTooLarge), and keeps the numbers of a tool result's structured
// content exact. [Upstream.Close] ends its sessions, waits for what it
// started and returns what closing them returned. A session given to
// NewUpstream is the caller's, and so are its transport's bounds and its
// client's decoding (numbers as float64). docs/code-mode.md has the rules
// in full.
//
// # Security considerations
//
// A script reaches nothing through an upstream but the tools of the
// upstreams its operator named. Their credentials
// (UpstreamOptions.Redact) are redacted from everything a script sees,
// and the SDK's and transports' error texts never reach it. The
// declarations defuse every text of an upstream (a tool's name, a
// description), so that it cannot end a comment or a string.
package codemode
