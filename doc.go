// Package sandbank is the front door of Sandbank: it runs untrusted,
// model-written scripts (JavaScript, Starlark, WebAssembly, and any engine
// a third party plugs in) from Go behind one set of guarantees, whichever
// engine runs them. This package holds no code; it says what to import for
// what.
//
// # Two audiences, two interfaces
//
// Applications import [github.com/sandbank/sandbank/effect] and one
// backend package. The effect is the only way to use a backend: it bounds
// the input and the output, reads scripts by content address, races the
// engine against the caller's context and the wall clock, maps what the
// engine reports into a closed set of typed failures, bounds every text,
// and refuses engines that reach the network or reuse their environment.
//
// Backend authors implement [github.com/sandbank/sandbank/spi] (standard
// library only) and prove their declaration with
// [github.com/sandbank/sandbank/conformance], the kit that runs real
// scripts (one per case and language, in
// [github.com/sandbank/sandbank/fixtures]) through the effect.
//
// # What to import for what
//
//   - Run a script: effect plus a backend, such as
//     [github.com/sandbank/sandbank/backends/quickjs] (JavaScript in
//     QuickJS compiled to WebAssembly, on wazero; the JavaScript default),
//     [github.com/sandbank/sandbank/backends/goja],
//     [github.com/sandbank/sandbank/backends/starlark] or
//     [github.com/sandbank/sandbank/backends/extism] (WebAssembly plugins).
//   - Choose an engine per flow by name, language or required capability:
//     [github.com/sandbank/sandbank/registry], filled by
//     [github.com/sandbank/sandbank/builtin] with every shipped engine.
//   - Write an engine: spi, then conformance from your own test.
//   - Use it without Go code: the command line in cmd/sandbank
//     (`go install ./cmd/sandbank` from a clone).
//
// # Errors
//
// Every error from the effect is one of three kinds: the script's typed
// failure (*effect.Failure, not worth retrying), the caller's invalid
// request (not retryable), or infrastructure (retryable). effect.KindOf
// tells them apart, and effect.Retryable follows from it.
//
// docs/design.md in the repository is the contract, docs/architecture.md
// explains how the packages fit together, and docs/RATIONALE.md records why.
package sandbank
