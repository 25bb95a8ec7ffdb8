// Package sandbank is the front door of Sandbank: it runs untrusted,
// model-written scripts (JavaScript, TypeScript, Python, Starlark,
// WebAssembly, and any engine a third party plugs in) behind one set of
// guarantees, whichever engine runs them. This package holds no code; it says what to import for
// what.
//
// # Library users
//
// Import [github.com/sandbank/sandbank/effect] and one backend, or
// [github.com/sandbank/sandbank/registry] filled by
// [github.com/sandbank/sandbank/builtin] to choose an engine by name,
// language or required capability. The effect is the only way to run a
// backend: it holds every guarantee (bounds, content-addressed scripts, the
// race against the context and the wall clock, the closed set of typed
// failures); a run's record is written in the plain data of
// [github.com/sandbank/sandbank/record] (the receipt, stats, logs, host
// calls, failure codes), which [github.com/sandbank/sandbank/receipt]
// signs and verifies. The engines: backends/quickjs (JavaScript in QuickJS compiled
// to WebAssembly on wazero, the JavaScript default),
// backends/quickjs/wasmtime (the same module on wasmtime, cgo),
// backends/goja, backends/typescript (esbuild in front of a JavaScript
// engine), backends/python (CPython, a process per run in a Linux sandbox),
// backends/starlark (in process), backends/starlarkwasm (Starlark compiled
// to WebAssembly) and backends/extism (WebAssembly plugins).
// [github.com/sandbank/sandbank/pool] builds each engine once and is what
// every door holds.
//
// # Door users
//
// Without Go code: [github.com/sandbank/sandbank/server] (HTTP, `sandbank
// serve`) and its Go [github.com/sandbank/sandbank/client],
// [github.com/sandbank/sandbank/mcpserver] (the Model Context Protocol,
// `sandbank mcp`), the Temporal activities of
// github.com/sandbank/sandbank/temporal (a module of its own), and the
// command line in cmd/sandbank (`go install ./cmd/sandbank`). Every door
// runs each script through the effect and adds no guarantee of its own.
//
// # Backend authors
//
// Implement [github.com/sandbank/sandbank/spi] (standard library only) and
// prove the declaration with [github.com/sandbank/sandbank/conformance],
// the kit that runs one real script per case and language (in
// [github.com/sandbank/sandbank/fixtures]) through the effect; a test runs
// it with [github.com/sandbank/sandbank/conformance/conformancetest].
//
// # Errors
//
// Every error from the effect is one of three kinds: the script's typed
// failure, the caller's invalid request, or retryable infrastructure;
// effect.KindOf tells them apart and effect.Retryable follows from it.
//
// docs/design.md in the repository is the contract, docs/architecture.md
// is the map (the packages by audience, the path of a run, where each
// guarantee lives), and docs/RATIONALE.md records why.
package sandbank
