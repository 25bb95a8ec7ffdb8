// Command sandbank is the Sandbank command line, for people meeting Sandbank
// for the first time and for backend authors: it runs one untrusted script
// through the effect, prints the verified conformance matrix of every
// built-in engine, lists the engines, serves them to agents as a Model
// Context Protocol server (mcp), and scaffolds a new backend package.
//
//	sandbank run [--engine NAME | --lang LANG] [--input JSON | --input-file FILE|-]
//	             [--memory 32MiB] [--timeout 2s] [--shape SCHEMA.json] [--store DIR]
//	             [--cache-dir DIR | --no-cache] [--json] [--receipt FILE] [--sign-key FILE] SCRIPT|-
//	sandbank verify --record FILE [--input JSON | --input-file FILE] [--key FILE | --keys DIR|FILE.json] SCRIPT
//	sandbank keygen [NAME]
//	sandbank matrix [--engine NAME]... [--case NAME]... [--json]
//	sandbank engines [--json]
//	sandbank mcp [--http ADDR [--tenants FILE] [--allow-origin ORIGIN]...] [--lang LANG]... [--engine NAME]...
//	             [--memory 32MiB] [--timeout 5s] [--cache-dir DIR | --no-cache] [--quiet] [--sign-key FILE]
//	             [--upstream NAME=COMMAND|NAME=URL]... [--upstream-allow ORIGIN]...
//	             [--upstream-env NAME=KEY=VALUE]... [--upstream-header 'NAME=HEADER: VALUE']...
//	             [--upstream-timeout 30s]
//	sandbank bench [--engine NAME]... [--runs N] [--json]
//	sandbank new backend NAME --language LANG [--dir DIR]
//	sandbank version [--json]
//	sandbank completion bash|zsh|fish|powershell
//
// Every built-in backend is registered explicitly by package builtin; no
// package registers itself in an init function. Run "sandbank COMMAND
// --help" for each command's flags and examples.
//
// # Exit codes
//
// One classification of the error (effect.KindOf, looked up in one table)
// gives both the exit code and, with --json, its "retryable" field, so the
// two never disagree:
//
//	0    success: run printed a value; matrix had no FAIL and no refusal
//	1    infrastructure (the engine failed; a retry may help; "retryable":
//	     true), or a matrix with a FAIL or a refused engine; a run
//	     cancelled by no signal of ours also exits 1, not retryable
//	2    run: a typed failure, the script's own doing (scriptError,
//	     limitExceeded, inputTooLarge, scriptTooLarge, shapeMismatch); not
//	     retryable
//	3    run --suspend, resume: the run suspended at a host call and its
//	     continuation was written (--continuation FILE); not retryable:
//	     resume it
//	64   an invalid request, not retryable: bad flags or arguments,
//	     unreadable files, an unknown engine or language, invalid JSON
//	     input, and every effect.ErrInvalidCall (an invalid --shape, …);
//	     an engine the effect refuses without an opt-in flag
//	130  cancelled by SIGINT; 143 by SIGTERM (run and matrix stop the run
//	     and report it; not retryable)
//
// Errors are one line on stderr, starting with "sandbank: ", never a Go
// stack trace. With run --json, stdout is exactly one JSON object for
// every exit code but 64: {"ok":true,"value":…}, {"ok":false,"code":…,…}
// (the effect's failure) or {"ok":false,"error":…,"retryable":…}; an
// invalid request prints nothing on stdout.
//
// With --json, a typed failure is exit code 2 AND its {"ok":false,"code":…}
// object on stdout: exit code 2 alone may be a crash of the Go runtime
// (see docs/RATIONALE.md R22).
//
// # Compiled-module cache
//
// The wasm engines keep their rewritten and compiled modules in
// os.UserCacheDir()/sandbank (run and mcp take --cache-dir DIR elsewhere,
// --no-cache for none), so that only the first run of an engine rewrites
// and compiles it (seconds) and later ones start in milliseconds. Entries
// are written atomically, so concurrent processes share the directory,
// and sealed with their SHA-256 by the engines themselves
// (internal/wasm/cache): a damaged entry is recompiled. serve and mcp
// warm the engines they offer before they report that they are ready.
//
// Two typed failures cannot come from the command line: scriptMissing
// (run passes the script with the call, or stores it first with --store)
// and inputNotSerializable (the input is JSON text, and invalid JSON is a
// usage error, reported at its line and column, found before any engine
// is built).
//
// # Security considerations
//
// run applies the effect's refusals: an engine that declares network access
// or reuses its environment between runs is refused unless
// --allow-network or --allow-reused-environment is passed. The limits
// default to the effect's (5 s wall clock, 32 MiB memory); an engine whose
// declaration says it does not enforce a limit (see "sandbank engines")
// does not enforce it from the command line either. Files read by the
// command line (script, input, schema) are bounded to 256 MiB.
//
// A compiled module read from the cache directory runs as machine code:
// run refuses a --cache-dir that others can write or that belongs to
// another user, and runs without the cache (saying so on stderr) when the
// default directory is such a one.
//
// # Reference
//
// docs/cli.md is every command's help, written from these commands by
// cobra's documentation generator; TestCLIReferenceIsCurrent fails when it
// is stale, and go generate rewrites it.
package main

//go:generate go test -run ^TestCLIReferenceIsCurrent$ . -update-cli-reference
