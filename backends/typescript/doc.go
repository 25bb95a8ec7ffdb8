// Package typescript runs TypeScript on any JavaScript backend: [Wrap]
// takes a backend whose language is "javascript" and returns one whose
// language is "typescript", which strips the script's types and hands the
// JavaScript to the inner engine. It is a composition, not an engine:
// every capability is the inner backend's, and the conformance kit proves
// the composition with fixtures written in TypeScript
// (github.com/sandbank/sandbank/fixtures/typescript).
//
// It is for applications that accept TypeScript from a model; use it
// through github.com/sandbank/sandbank/effect like any backend.
//
// # The script contract
//
// JavaScript's, unchanged: the input is the global `input`, and the result
// is the script's completion value (its last expression statement), which
// the transform keeps in place. Type syntax (annotations, interfaces, type
// aliases, generics, enums, namespaces, `as`, `satisfies`, parameter
// properties) is accepted and removed; enums and namespaces become the
// JavaScript esbuild emits for them.
//
// # Host calls
//
// The backend declares what its inner engine declares, HostCalls included,
// and passes the request's broker through: TypeScript's `host` is the
// inner engine's (declare it, e.g. `declare const host: {orders(q:
// {since: string}): Promise<Order[]>}`; types are stripped, not checked).
//
// # Fixed semantics
//
// The transform (esbuild's, in pure Go) runs with options that are fixed,
// not left to defaults: target ES2022 (class fields, private members and
// static blocks stay native, so ordinary scripts get no helper functions),
// class fields with define semantics (`useDefineForClassFields`), standard
// (TC39) decorators rather than TypeScript's experimental ones
// (`experimentalDecorators` off) — no engine runs decorators natively, so
// esbuild lowers them into helper functions declared at the top of the
// script, which the script can see as globals named `__…` —, JSX off (the
// loader is plain `ts`), no minification, no bundling, no tree shaking. Module syntax
// (`import`, `export`) is refused with a SyntaxError, as JavaScript scripts
// refuse it; `import type` is type syntax and is simply removed.
//
// # Errors
//
// A TypeScript syntax error is an spi.Threw outcome named "SyntaxError"
// whose message starts with the TypeScript line and column
// ("script.ts:3:14: Unexpected \";\""). Runtime errors are the inner
// engine's: their name and message are unchanged, and no shipped engine
// puts a line number in them, so nothing needs mapping. The transform
// reformats the code, so a line number that an inner engine might report
// would be one of the JavaScript, not of the TypeScript.
//
// There is no type checking: types are removed, not verified, so a script
// with a type error runs as the JavaScript it becomes. A caller who wants
// type errors must check the script before submitting it (for instance with
// tsc --noEmit in its own toolchain).
//
// # Security considerations
//
// esbuild parses in the host process, where a Go stack overflow ends the
// process and its allocations are the host's. So, before it runs, a script
// is refused with a SyntaxError when it has more than [MaxSteps]
// brackets, operators and keywords (each can open a level of the syntax
// tree; about 100 KiB of ordinary code), nests brackets and functions
// deeper than [MaxScopes], or has enums whose folding esbuild does not
// bound (a member computed with + where enums hold strings, an enum string
// over 256 bytes, a division or regular expression in an enum body). The
// transform is charged to the run's wall clock (a transform past it is
// Limit wallClock; the inner engine gets the rest), and at most
// [Options].MaxTransforms run at once: a transform cannot be stopped, so
// one given up on keeps its slot until it ends. docs/RATIONALE.md (R18)
// gives the measurements.
//
// # Notes
//
// Transforms are cached by the script's SHA-256, bounded in entries and
// bytes (see [Options]); a cached script is not transformed again, and
// only a transform that succeeded within its run's wall clock is cached.
package typescript
