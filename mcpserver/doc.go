// Package mcpserver is Sandbank as a Model Context Protocol server: a
// model's client (an agent, an IDE, a chat application) calls its tools to
// run the scripts the model writes, behind every guarantee of package
// effect. The command line serves it as 'sandbank mcp'; a Go program can
// serve it on any transport of github.com/modelcontextprotocol/go-sdk.
//
// [New] builds a [Server] from a registry of engines and the server's
// limits. Its tools are, for each language the registry has,
//
//	run_javascript   {"script": "<source>", "input": <any JSON>, "limits": {"timeoutMs": n, "memoryBytes": n}}
//	run_typescript   the same
//	run_starlark     the same
//	run_python       the same
//	list_engines     {}
//
// each with an input schema and a description written for the model: what
// the script sees, how it returns a value, what it cannot do, the limits
// (from the engine's declared capabilities and the server's limits, so a
// description never promises more than the engine declares).
//
// # Host functions
//
// [Options].Host gives every run on an engine that declares host calls
// its host functions, and the run tools' descriptions say what they are
// ([Host]); when that text changes, the run tools are declared again and
// the clients hear notifications/tools/list_changed. Package codemode's
// Host is one: the tools of other MCP servers (code mode), so that a
// script calls many tools at once and reshapes what they return. Every
// call is a host call of the effect: bounded (Options.MaxHostArgBytes,
// MaxHostResultBytes, MaxHostCalls), cancelled with the run, and counted
// in its record.
//
// # Durable runs
//
// [Options].Suspend names host functions that suspend a run on an engine
// that declares deterministic (docs/design.md, "Durable runs"): the
// result is the typed failure suspended with [Result].Waiting (the run's
// id, the call's name and arguments) and a hint, the run is kept in
// Options.Continuations, and the tool resume_run continues it with the
// answer (package durable replays it), once, for the caller whose
// [Admission].Tenant ran it. A kept continuation that does not check, or
// is not signed by Options.Signer when it is set, is an error result.
//
// # Results
//
// A run tool's result carries, as structured content ([Result]) and as
// text, the value or the typed failure, the logs and the stats of the
// effect's run record, plus its receipt, signed when Options.Signer is
// set (and, in the structured content only, the list of the script's
// host calls in the order issued, and the run id under which
// Options.Receipts keeps the receipt, when it is set):
//
//   - a value: a result;
//   - a typed failure (*effect.Failure: scriptError, limitExceeded, …): a
//     result with IsError set and a hint, which the model reads and
//     corrects;
//   - arguments the server refuses (no script, an unknown argument, limits
//     above the server's): a result with IsError set and InvalidCall
//     saying what was wrong; the script does not run;
//   - infrastructure (an engine that failed to build or to answer,
//     effect.ErrOverloaded): a protocol error, retryable;
//   - a caller at a quota of its own (effect.KindQuota: a tenant's runs in
//     flight at their cap, through Options.Admit): the protocol error
//     [CodeQuota], its data {"kind":"quota","retryable":true}, as the
//     HTTP door's Problem says;
//   - the client's cancellation (notifications/cancelled): the run's
//     context is cancelled, so the effect stops the run (at once on an
//     engine with a hard wall clock), and the call is not answered on a
//     [StreamTransport], as MCP asks; over HTTP, whose stream needs an
//     answer, it is the JSON-RPC error [CodeRequestCancelled] (-32800).
//
// # Transports
//
// Serve [Server.MCP] with [mcp.Server.Run] on a [StreamTransport]
// (newline-delimited JSON-RPC, such as standard input and output), or over
// streamable HTTP with [Server.HTTPHandler]. On either, a malformed
// message is answered with a JSON-RPC error (-32700 parse error, -32600
// invalid request) and the session goes on; the SDK's own stdio
// transports end the session on it. A StreamTransport answers every
// request it read before the end of its input ends the session.
//
// A call whose request carries a progress token hears of its run every
// [Options].ProgressInterval (default one second) while it lasts, with the
// seconds elapsed out of the wall-clock limit.
//
// # Security considerations
//
// Every run goes through package effect: the server's limits are the
// effect's ceiling and a call's own limits may only lower them (a higher
// one is refused, not clamped). New refuses an engine that declares
// network access or reuses its environment. The server reaches nothing on
// a script's behalf but the host functions its operator gave it
// (Options.Host), each call a host call of the run.
//
// For a language nobody chose an engine for, a tool runs the language's
// default engine, as every door does (package pool's Resolve); a call
// whose Admission restricts its engines runs the first of them that runs
// the language. An engine that does not bound memory (go.starlark.net's
// Starlark, goja) runs in the server's process: a script can make the
// whole process allocate until the system stops it; its tool's description
// says so.
//
// What arrives over a transport is as trusted as the transport: the
// standard input of a process its client started, or an HTTP address.
// [Server.HTTPHandler] refuses a request from a browser page of a foreign
// origin (403; [HTTPOptions].AllowedOrigins names more than the loopback
// ones), against DNS rebinding, and a request without a session that is
// not an initialize request (400).
// 'sandbank mcp --http' refuses an address off loopback unless it has
// tenants (API keys, and each tenant's quotas through [Options].Admit).
package mcpserver
