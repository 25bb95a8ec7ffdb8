// Command sandbank is the Sandbank command line, for people meeting Sandbank
// for the first time and for backend authors: it runs one untrusted script
// through the effect, prints the verified conformance matrix of every
// built-in engine, lists the engines, and scaffolds a new backend package.
//
//	sandbank run [--engine NAME | --lang LANG] [--input JSON | --input-file FILE]
//	             [--memory 32MiB] [--timeout 2s] [--shape SCHEMA.json] [--store DIR]
//	             [--json] SCRIPT|-
//	sandbank matrix [--engine NAME]... [--case NAME]... [--json]
//	sandbank engines [--json]
//	sandbank bench [--engine NAME]... [--runs N] [--json]
//	sandbank new backend NAME --language LANG [--dir DIR]
//	sandbank version
//
// Every built-in backend is registered explicitly by package builtin; no
// package registers itself in an init function. Run "sandbank COMMAND
// --help" for each command's flags and examples.
//
// # Exit codes
//
//	0   success: run printed a value; matrix had no FAIL and no refusal
//	1   an untyped error (the engine failed, the run was cancelled; a retry
//	    may help), or a matrix with a FAIL or a refused engine
//	2   run: a typed failure, the script's own doing (scriptError,
//	    limitExceeded, inputTooLarge, shapeMismatch)
//	64  a usage error: bad flags or arguments, unreadable files, an unknown
//	    engine or language, invalid JSON input, an engine the effect refuses
//	    without an opt-in flag
//
// Errors are one line on stderr, starting with "sandbank: ", never a Go
// stack trace. With run --json, stdout is exactly one JSON object for exit
// codes 0, 1 and 2: {"ok":true,"value":…}, {"ok":false,"code":…,…} (the
// effect's failure) or {"ok":false,"error":…,"retryable":…}; a usage error
// prints nothing on stdout.
//
// Two typed failures cannot come from the command line: scriptMissing (run
// stores the script before it evaluates it) and inputNotSerializable (the
// input is JSON text, and invalid JSON is a usage error found before any
// engine is built).
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
package main
