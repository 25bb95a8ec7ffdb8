// Package server is Sandbank's HTTP API: the effect's guarantees for
// callers that are not Go, with tenants and quotas. The command line
// serves it as "sandbank serve"; a Go program can mount it as an
// http.Handler ([New]) or serve it with its own timeouts ([Server.Serve]).
// Go callers on another machine use package client.
//
// # API
//
//	POST /v1/scripts       store a script in the tenant's store; returns its content address (idempotent)
//	POST /v1/runs          run a script (source, sourceBase64 or script address) on an engine or a language's default
//	GET  /v1/runs/{run}/receipt  a run's receipt, by the id of its answer's Sandbank-Run header (tenant-scoped)
//	POST /v1/runs/{run}/resume   continue a suspended run with the answer it waits for (tenant-scoped, once)
//	GET  /v1/engines       the engines the tenant may use: declared and verified capabilities
//	GET  /v1/openapi.json  the OpenAPI 3.1 document, generated from the handlers' Go types
//	GET  /healthz          200 while serving, 503 while draining
//	GET  /metrics          Prometheus metrics
//	GET  /.well-known/sandbank-keys  the public keys receipts are signed with, current and retired (KeysPath)
//
// A run returns its run record (effect.Record): the value under "value",
// or the typed failure under "failure", with logs, stats and a receipt.
// Every receipt is signed by the server's key (Options.Signer; without
// one, a key generated for the process), so anyone can check with the
// published keys who vouches for a run (receipt.Verify with
// receipt.WithKeys; docs/record.md).
//
// # What the server keeps
//
// With a data directory (Options.Data, package storage), each tenant's
// scripts (a storage.DirStore) and the
// receipts of the runs answered 200 (an append-only log, each record
// framed with its length and a checksum) are on disk, synced, before the
// answer is sent; a receipt that cannot be kept makes the run a 503.
// storage.OpenData reads them back and checks them: a torn or damaged record, or a script
// that does not match its address, is reported (a log line and
// sandbank_store_damaged_total) and never served. The log rotates by size
// (storage.DataOptions). Without a data directory both are kept in
// memory, bounded, and a restart loses them. docs/data-dir.md
// has the layout and the rotation.
//
// # Status codes
//
// A typed failure is the script's own outcome, not an error of the
// request: the run happened, its record (receipt included) is the
// resource, and the same request fails the same way. So it is a 200 with
// "failure" set, never 422: generic HTTP clients, proxies and retry
// policies read 4xx as "your request is wrong", and a caller must be able
// to tell a script that threw from a request that never ran. 422 is left
// to huma's meaning, a body that parses but does not validate.
//
// Every other error is an application/problem+json [Problem] (RFC 9457)
// whose kind and retryable members say which of the two other kinds it is:
//
//	400 invalidCall     malformed JSON; an unknown engine or language; limits above the tenant's ceiling; an invalid shape
//	401 unauthorized    no key, or not a known one
//	403 invalidCall     the tenant may not use the engine named, or none of its engines runs the language named
//	404 invalidCall     no such script in the tenant's store, or no such run in its receipts or suspended runs (per tenant: another tenant's address or run is unknown)
//	409 invalidCall     a resumption of the run is in flight
//	413 invalidCall     the body is larger than MaxBodyBytes (refused before it is read past the bound), or the script does not fit in the tenant's store
//	415 invalidCall     the content type is not JSON
//	422 invalidCall     the body does not match the schema (unknown fields, wrong types)
//	429 quota           the tenant's rate limit or concurrent-run cap; Retry-After
//	503 overloaded      the run queue is full or its wait ran out; Retry-After
//	503 infrastructure  an engine failed, or the server is shutting down; Retry-After
//
// 4xx other than 429 are not retryable; 429 and 503 are. Every Problem
// carries retryable, false included. A Problem quotes what the caller
// sent (an unknown engine's name, a field's) only as an excerpt
// (effect.Excerpt), and lists at most 8 invalid parts.
//
// A response written before its request's body was read to the end (a
// body over MaxBodyBytes, a refusal before the body is read) says
// Connection: close and closes the connection: the rest of the body is
// never read, so never served as a request of its own.
//
// # Verified capabilities
//
// GET /v1/engines lists each engine's declared capabilities and what the
// conformance kit proved of them on this server (Options.Verify, in the
// command line conformance.Check with the built-in fixtures). The server
// holds only the kit's report (package conformance/verdict): it links
// neither the kit, its hostile fixtures nor package testing. The kit is
// too dear to run per request (it waits for the CPU to go idle, runs
// hostile scripts), so the server runs it at most once per engine per
// process, one engine at a time, in the background, started by the first
// listing; until it ends the engine's verdict is "pending".
//
// # Host calls
//
// Host calls answered live (a script calling back into its host mid-run)
// are not offered over HTTP: they would need the caller to answer calls
// while its request is in flight, a bidirectional stream or callbacks to
// a URL the caller names (a server-side request forgery risk), and
// neither is natural in a request/response API. A Go program that needs
// them runs the effect in process. What HTTP offers instead is the
// durable run (docs/design.md, "Durable runs"): the host functions a
// request names in suspend end the run suspended, its answer says what it
// waits for (RunAnswer.Waiting), and POST /v1/runs/{run}/resume gives the
// answer and replays the run on; the suspended run holds nothing but its
// continuation, kept in the tenant's store (storage.Data.Continuations).
// 404 is an unknown run, another tenant's or one resumed already; 409 a
// resumption in flight; 400 a continuation that does not check.
//
// # Overload and shutdown
//
// Runs across all tenants are capped (Options.MaxConcurrentRuns) with a
// bounded queue in front (MaxQueue) and a queue timeout (QueueTimeout):
// past them a run is a quick 503, so waiting requests, their goroutines
// and their (bounded) bodies are bounded too. Each tenant's concurrent
// runs and request rate are capped on top (package tenant); the key and
// the rate are checked by the admission every Sandbank HTTP door shares
// (RequireTenant), so another door answers 401 and 429 as the server does.
// Serve sets read-header, read, write and idle timeouts, so a slow client
// cannot hold a connection or a run, and holds at most MaxConnections
// connections open (further clients wait in the kernel's backlog). Shutdown stops accepting, lets the
// runs in flight finish until its context is done, then cancels them:
// their callers get a retryable 503, and nothing is half-written (a
// response is written only once its run has ended).
//
// # Security considerations
//
// The access log (Options.Logger) holds the tenant, route, status, engine,
// run id, outcome and durations of each request, never its script, input,
// value or failure text. Errors never echo the caller's values. Without
// Options.Tenants the server is in development mode: every caller is the
// tenant "dev", and Serve refuses a listener that is not on a loopback
// address. /metrics, /healthz, the OpenAPI document and the published
// keys need no API key; the metrics carry no tenant names.
package server
