package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/wasm/cache"
	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// maxFileBytes bounds what the command line reads into memory from a
// script, input or shape file (or standard input).
const maxFileBytes = 256 << 20

// extLanguages maps a script's file extension to its language.
var extLanguages = map[string]string{
	".js":   "javascript",
	".py":   "python",
	".star": "starlark",
	".ts":   "typescript",
	".wasm": "wasm",
}

type runOptions struct {
	engine, lang       string
	input              jsonFlag
	inputFile          string
	memory, timeout    string
	shape, store       string
	json               bool
	allowNetwork       bool
	allowReusedRuntime bool
	cacheDir           string
	noCache            bool
	packages           []string       // --package NAME (python's allow-list)
	hosts              []string       // --host NAME=FILE.json (host.go)
	hostLog            *hostLog       // the calls the run made, for --json
	rec                recordOptions  // record.go
	dur                durableOptions // --suspend, --continuation; resume (cmd_resume.go)
	files              fileOptions    // --file, --out (files.go)
}

func (a *app) runCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] SCRIPT|-",
		Short: "Run one script through the effect and print its value",
		Long: `run evaluates SCRIPT through the Sandbank effect on the chosen engine
and prints the result value as JSON. The script travels with the call
(the effect names it by its content address and writes it nowhere);
with --store DIR it is kept in that content-addressed store first and
run from there.

The engine is --engine, or the default engine of --lang, or the default
engine of the language the script's extension names (.js javascript,
.ts typescript, .star starlark, .wasm wasm). With SCRIPT "-" the script
is read from standard input and --lang or --engine is required.

The input is --input (JSON text) or the contents of --input-file; without
either the script's input is null. Invalid JSON input is a usage error,
found before any engine is built.

Each --host NAME=FILE.json gives the script a host function NAME that
answers every call with the file's JSON, whatever its arguments
(JavaScript: await host.NAME(args); Starlark: host.NAME(args); wasm: the
"sandbank:host" imports); with --json the output lists the calls made,
in order, as "hostCalls": [{"name":…,"args":…}]. An engine that does not
declare host calls is refused. No host function the command line offers
runs a command or reaches the network.

Each --file PATH gives the script an input file, named by its base name
(--file NAME=PATH names it): a flat name of letters, digits, '.', '_'
and '-' (a name that is not is a usage error). The script reads it in
its language's idiom (Python: open("data.csv"); JavaScript:
files.read("data.csv"); Starlark: files.read("data.csv")); an engine
that does not declare files refuses a run with any. The files the script
writes (Python: under out/) are written into --out DIR, each whole or
not at all, and only when the run returns a value; DIR is created when
absent and must be empty, so an output file never replaces one of
yours. Without --out they are not written. With --json the object lists
them as "files": [{"name":…,"digest":…,"bytes":…,"path":…}].

--suspend NAME gives the script a host function NAME that answers "not
yet": the run ends suspended (exit code 3) and its continuation is
written to --continuation FILE (canonical JSON: the receipt, the input,
the script, the host calls so far and the pending one). "sandbank
resume FILE --answer JSON" continues it later, on any machine with the
same engine. Only an engine that declares deterministic runs may
suspend.

Compiled modules are cached in the user cache directory's sandbank/
(--cache-dir DIR elsewhere, --no-cache for none), so only the first run
of a QuickJS engine compiles it; a damaged cache entry is recompiled.

Exit codes, from one classification of the error:
  0    the script returned a value (printed on stdout)
  2    a typed failure, the script's own doing: scriptError, limitExceeded
       (cpu, memory, wallClock, output), inputTooLarge, scriptTooLarge,
       shapeMismatch; not retryable
  64   an invalid request: bad flags, unreadable files, unknown engine or
       language, invalid JSON input, an invalid --shape, an engine refused
       without its opt-in; not retryable
  1    infrastructure: the engine failed; retrying may help
  3    suspended (--suspend): the continuation is written; see resume
  130  cancelled by SIGINT (143: by SIGTERM); not retried by itself

What the script logs (console.log and its kin, print, a module's log
calls and standard streams) is printed on stderr as it arrives, one line
each, prefixed by its level unless it is info ("warn: careful"); --quiet
prints none of it.

With --json, stdout is exactly one JSON object for every code but 64:
  {"ok":true,"value":...}
  {"ok":false,"code":"limitExceeded","kind":"memory",...}
  {"ok":false,"error":"...","retryable":true}
where "retryable" is true exactly for exit code 1. When the run has a
record (it reached the engine, or failed typed), the object also holds
its "logs", "stats" and "receipt" (and "logsCut" when lines were
dropped); "sandbank verify" checks it later. --receipt FILE writes the
receipt alone, as canonical JSON. --sign-key FILE signs the receipt
with the private key of "sandbank keygen" (a file anyone but its owner
may read is refused). An invalid request prints one line on
stderr and nothing on stdout.

Telling a typed failure from a crash: the Go runtime also exits 2 when
the process dies of a fatal error. A typed failure is exit code 2 AND,
with --json, its {"ok":false,"code":...} object on stdout, written after
the engine is closed, as the last thing the run does; a crash writes
nothing on stdout (its "fatal error:" or "panic:" text goes to stderr).
If the object cannot be written, the run exits 1, never 2.`,
		Example: `  sandbank run hello.js
  sandbank run --input '{"name":"Ada"}' greet.star
  sandbank run --engine goja --timeout 500ms --memory 16MiB loop.js
  echo 'input.n * 2' | sandbank run --lang javascript --input '{"n":21}' -
  sandbank run --json --shape schema.json --input-file data.json reshape.js
  sandbank run --input '{"a":1}' echo.wasm
  sandbank run --json --host orders=orders.json report.js
  sandbank run --json --receipt receipt.json --input '{"n":2}' double.js
  sandbank run --file data.csv --out out/ chart.py`,
		Args: cobra.ExactArgs(1),
		RunE: wrap(func(cmd *cobra.Command, args []string) error {
			return a.runScript(cmd.Context(), &o, args[0])
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.engine, "engine", "", "engine `NAME` (see 'sandbank engines')")
	f.StringVar(&o.lang, "lang", "", "script `LANGUAGE`; runs the language's default engine")
	f.Var(&o.input, "input", "the script's input as `JSON` text (default null)")
	f.StringVar(&o.inputFile, "input-file", "", "read the script's input (JSON text) from `FILE` (\"-\": standard input)")
	f.StringVar(&o.memory, "memory", "", "memory limit `SIZE`: 32MiB, 32 MiB or 32mib (2^20 bytes each), 32MB or 32mb (10^6), or bytes (default 32MiB)")
	f.StringVar(&o.timeout, "timeout", "", "wall-clock limit `DURATION`, such as 2s or 500ms (default 5s)")
	f.StringVar(&o.shape, "shape", "", "JSON Schema `FILE` the result must satisfy")
	f.StringVar(&o.store, "store", "", "keep the script in the content-addressed store in `DIR`")
	f.BoolVar(&o.json, "json", false, "print exactly one JSON object on stdout")
	f.StringArrayVar(&o.hosts, "host", nil, "give the script a host function `NAME=FILE.json` answering with the file's JSON (repeatable)")
	f.BoolVar(&o.allowNetwork, "allow-network", false, "accept an engine that declares network access")
	f.BoolVar(&o.allowReusedRuntime, "allow-reused-environment", false, "accept an engine that reuses its environment between runs")
	_ = cmd.RegisterFlagCompletionFunc("engine", a.completeEngines)
	_ = cmd.RegisterFlagCompletionFunc("lang", a.completeLanguages)
	f.StringVar(&o.cacheDir, "cache-dir", "", "keep compiled modules in `DIR` (default: the user cache directory's sandbank/)")
	f.BoolVar(&o.noCache, "no-cache", false, "compile the engine's module afresh, with no compiled-module cache")
	addPackageFlag(cmd, &o.packages)
	o.rec.addFlags(cmd)
	o.dur.addFlags(cmd)
	o.files.addFlags(cmd)
	return cmd
}

// runScript is "sandbank run": the run, cancelled by SIGINT or SIGTERM,
// then its report.
func (a *app) runScript(ctx context.Context, o *runOptions, script string) error {
	ctx, stop := cancelOnSignal(ctx)
	defer stop()
	value, err := a.evaluate(ctx, o, script)
	if err == nil {
		err = a.writeOutputs(o)
	}
	return a.report(o, value, err)
}

// evaluate checks every flag first, then builds the engine and runs the
// script.
func (a *app) evaluate(ctx context.Context, o *runOptions, script string) (json.RawMessage, error) {
	var limits spi.Limits
	if o.memory != "" {
		n, err := parseBytes(o.memory)
		if err != nil {
			return nil, usagef("--memory: %s", reason(err))
		}
		limits.MemoryBytes = n
	}
	if o.timeout != "" {
		d, err := time.ParseDuration(o.timeout)
		if err != nil || d <= 0 {
			return nil, usagef("--timeout: invalid duration %s (want a positive duration such as 2s or 500ms)", quote(o.timeout))
		}
		limits.WallClock = d
	}
	input := json.RawMessage("null")
	switch {
	case o.input.set && o.inputFile != "":
		return nil, usagef("--input and --input-file cannot be used together")
	case o.input.set:
		if err := checkJSON([]byte(o.input.text)); err != nil {
			return nil, usagef("--input: %v", err)
		}
		input = json.RawMessage(o.input.text)
	case o.inputFile == "-" && script == "-":
		return nil, usagef("the script and --input-file cannot both be standard input")
	case o.inputFile != "":
		var b []byte
		var err error
		if o.inputFile == "-" {
			b, err = readBounded(a.stdin, "the input on standard input")
		} else {
			b, err = readFileBounded(o.inputFile)
		}
		if err != nil {
			return nil, usagef("--input-file %s: %s", effect.Excerpt(o.inputFile), reason(err))
		}
		if err := checkJSON(b); err != nil {
			return nil, usagef("--input-file %s: %s", effect.Excerpt(o.inputFile), reason(err))
		}
		input = b
	}

	hostFuncs, hostLog, err := parseHosts(o.hosts)
	if err != nil {
		return nil, err
	}
	if hostFuncs, hostLog, err = o.dur.suspending(hostFuncs, hostLog, o.store); err != nil {
		return nil, err
	}
	o.hostLog = hostLog

	var shape json.RawMessage
	if o.shape != "" {
		b, err := readFileBounded(o.shape)
		if err != nil {
			return nil, usagef("--shape %s: %s", effect.Excerpt(o.shape), reason(err))
		}
		if err := checkJSON(b); err != nil {
			return nil, usagef("--shape %s: %s", effect.Excerpt(o.shape), reason(err))
		}
		shape = b
	}

	var src []byte
	if script == "-" {
		if o.engine == "" && o.lang == "" {
			return nil, usagef("reading the script from standard input needs --lang or --engine")
		}
		b, err := readBounded(a.stdin, "the script on standard input")
		if err != nil {
			return nil, usagef("reading the script from standard input: %v", err)
		}
		src = b
	} else {
		b, err := readFileBounded(script)
		if err != nil {
			return nil, usagef("cannot read script %s: %s", effect.Excerpt(script), reason(err))
		}
		src = b
	}

	if err := o.rec.openReceipt(); err != nil {
		return nil, err
	}
	files, err := o.files.read()
	if err != nil {
		return nil, err
	}
	if err := o.files.prepareOut(); err != nil {
		return nil, err
	}
	call := effect.Call{Input: input, Shape: shape, Host: hostFuncs, Source: src, Files: files}
	return a.runOn(ctx, o, script, limits, call)
}

// runOn builds the engine that --engine, --lang or the script's name
// chooses, with limits as its ceiling, and runs call on it: durably with
// --suspend, as a resumption for "sandbank resume".
func (a *app) runOn(ctx context.Context, o *runOptions, script string, limits spi.Limits, call effect.Call) (json.RawMessage, error) {
	reg, err := a.registry()
	if err != nil {
		return nil, err
	}
	// The store: without --store the script travels with the call
	// (Call.Source): the effect hashes it and names it by its address, and
	// nothing is written anywhere.
	var store effect.ScriptReader = new(storage.MemoryStore)
	var dir *storage.DirStore
	if o.store != "" {
		if dir, err = storage.NewDirStore(o.store, nil); err != nil {
			return nil, usagef("--store %s: %s", effect.Excerpt(o.store), reason(err))
		}
		store = dir
	}
	// The engine, built once by a pool of one run: the flags' limits are
	// its ceiling.
	var factory spi.Factory
	p, err := pool.New(reg, &pool.Options{
		Effect: effect.Options{
			Limits:                 limits,
			AllowNetwork:           o.allowNetwork,
			AllowReusedEnvironment: o.allowReusedRuntime,
			EventBuffer:            eventBuffer,
			Signer:                 o.rec.signer,
		},
		Scripts: store,
		Factory: func(registry.Entry) spi.Factory { return factory },
	})
	if err != nil {
		return nil, err
	}
	entry, err := chooseEngine(p, o, script)
	if err != nil {
		return nil, err
	}
	if refusal := refuse(entry.Capabilities, o); refusal != nil {
		return nil, refusal
	}
	if dir != nil && call.Source != nil {
		addr, err := dir.Put(call.Source)
		if err != nil {
			return nil, untyped(fmt.Errorf("storing the script: %w", err))
		}
		call.Script, call.Source = addr, nil
	}
	if factory, err = a.engineFactory(entry, o); err != nil {
		return nil, err
	}
	defer p.Close()
	eff, err := p.Effect(entry.Engine)
	if err != nil {
		return nil, err
	}
	value, err := a.runRecorded(ctx, eff, call, o)
	return value, signalled(ctx, err)
}

// report prints the outcome of run: the value, or the error as classify
// sees it. With --json stdout gets exactly one object for every exit code
// but 64: {"ok":true,"value":…}; a typed failure's {"ok":false,"code":…};
// or {"ok":false,"error":…,"retryable":…} where retryable is true exactly
// for exit code 1. A usage error is one line on stderr only. report runs
// after the engine is closed, so that a typed failure's object is the
// last thing the process does.
func (a *app) report(o *runOptions, value json.RawMessage, err error) error {
	if err == nil {
		if o.json {
			b, err := json.Marshal(struct {
				OK    bool            `json:"ok"`
				Value json.RawMessage `json:"value"`
			}{true, value})
			if err == nil {
				b, err = o.rec.withRecord(b)
			}
			if err != nil {
				return untyped(err)
			}
			_, err = fmt.Fprintf(a.stdout, "%s\n", o.files.withFiles(withHostCalls(b, o.hostLog)))
			return err
		}
		if _, err := fmt.Fprintf(a.stdout, "%s\n", value); err != nil {
			return untyped(err)
		}
		return nil
	}
	code, retryable := classify(err)
	if !o.json || code == exitUsage {
		return &exitError{code: code, err: err}
	}
	var out []byte
	var failure *effect.Failure
	if (code == exitFailure || code == exitSuspend) && errors.As(err, &failure) {
		b, merr := json.Marshal(failure)
		if merr != nil || len(b) < 2 || b[0] != '{' {
			return untyped(fmt.Errorf("encoding the failure: %v", merr))
		}
		out = []byte(`{"ok":false`)
		if len(b) > 2 {
			out = append(out, ',')
		}
		out = append(out, b[1:]...)
	} else {
		b, merr := json.Marshal(struct {
			OK        bool   `json:"ok"`
			Error     string `json:"error"`
			Retryable bool   `json:"retryable"`
		}{false, oneLine(err.Error()), retryable})
		if merr != nil {
			return untyped(merr)
		}
		out = b
	}
	if withRec, rerr := o.rec.withRecord(out); rerr == nil {
		out = withRec
	}
	out = withHostCalls(out, o.hostLog)
	if _, werr := fmt.Fprintf(a.stdout, "%s\n", out); werr != nil {
		// Without its object on stdout, a typed failure must not exit 2:
		// the object is what tells it from a crash.
		return untyped(fmt.Errorf("writing the result: %w (after: %v)", werr, err))
	}
	return &exitError{code: code, err: err, quiet: true}
}

// engineFactory returns the factory run builds the engine with. The
// engines keep their compiled modules, sealed, in the default cache
// directory (os.UserCacheDir()/sandbank) on their own (internal/wasm/cache);
// run only moves it (--cache-dir, where an unusable directory is a usage
// error) or turns it off (--no-cache), through a.cacheFactory. A default
// directory that cannot be used is reported on stderr and costs only
// time. An engine without a cache option gets the entry's own factory.
func (a *app) engineFactory(entry registry.Entry, o *runOptions) (spi.Factory, error) {
	if o.noCache && o.cacheDir != "" {
		return nil, usagef("--cache-dir and --no-cache cannot be used together")
	}
	if len(o.packages) > 0 {
		return packagesFactory(entry, o.packages, o.cacheDir, o.noCache) // packages.go
	}
	if a.cacheFactory == nil {
		return entry.Factory, nil
	}
	dir := o.cacheDir
	switch {
	case o.noCache:
	case dir != "":
		if err := cache.Prepare(dir); err != nil {
			return nil, usagef("--cache-dir: %v", err)
		}
	default:
		def := cache.DefaultDir()
		err := errors.New("no user cache directory")
		if def != "" {
			err = cache.Prepare(def)
		}
		if err == nil {
			return entry.Factory, nil
		}
		fmt.Fprintf(a.stderr, "sandbank: warning: running without the compiled-module cache: %s\n", oneLine(err.Error()))
	}
	// dir is the directory asked for, or "" for none.
	if f := a.cacheFactory(entry.Engine, dir); f != nil {
		return f, nil
	}
	return entry.Factory, nil
}

// chooseEngine resolves --engine, --lang or the script's extension to a
// registered engine, by every door's policy (pool.Pool.Resolve). Every
// failure is a usage error.
func chooseEngine(p *pool.Pool, o *runOptions, script string) (registry.Entry, error) {
	lang := o.lang
	if o.engine == "" && lang == "" {
		l, ok := extLanguages[filepath.Ext(script)]
		if !ok {
			return registry.Entry{}, usagef("cannot tell the language of %s from its extension (.js, .ts, .star, .wasm); pass --lang or --engine", quote(filepath.Base(script)))
		}
		lang = l
	}
	e, err := p.Resolve(o.engine, lang)
	if err != nil {
		return registry.Entry{}, resolveError(p.Registry(), o.engine, lang, err)
	}
	return e, nil
}

// refuse applies the effect's opt-ins to the engine's declaration before
// it is built, so a refusal is a usage error that names the flag to pass
// (the effect applies them again to the backend's own).
func refuse(caps spi.Capabilities, o *runOptions) error {
	if caps.Network != spi.NetworkNone && !o.allowNetwork {
		return usagef("engine declares network %s; pass --allow-network to accept it", caps.Network)
	}
	if !caps.FreshPerRun && !o.allowReusedRuntime {
		return usagef("engine reuses its environment between runs; pass --allow-reused-environment to accept it")
	}
	return nil
}

func (a *app) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return untyped(err)
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

func closeBackend(b spi.Backend) {
	if c, ok := b.(io.Closer); ok {
		_ = c.Close()
	}
}

// readFileBounded reads a file of at most maxFileBytes.
func readFileBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, name)
}
