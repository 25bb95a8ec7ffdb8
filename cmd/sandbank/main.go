package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command line: it parses args, runs the command and
// returns the process exit code. Tests call it with captured streams.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{
		stdin:        stdin,
		stdout:       stdout,
		stderr:       stderr,
		newRegistry:  builtinRegistry,
		fixtures:     builtin.Fixtures,
		cpuBudget:    builtin.CPUBudgetFactory,
		cacheFactory: builtin.CacheFactory,
		isTerminal:   isTerminal,
		missing:      builtin.Missing,
	}
	return a.execute(args)
}

// app holds the streams and the injectable parts of the command line, so
// tests can run it against a registry of fake engines.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	// newRegistry builds the engine registry. It is called only by the
	// commands that need engines, and it constructs no backend (the
	// entries carry their declarations): a command builds one from an
	// entry's factory when it runs the engine, so "engines" builds none.
	newRegistry func() (*registry.Registry, error)
	// fixtures returns the conformance fixture set of a language.
	fixtures func(language string) (*fixtures.Set, bool)
	// cpuBudget returns a small-budget factory of an engine, or nil.
	cpuBudget func(engine string) spi.Factory
	// cacheFactory returns a factory of an engine with its compiled-module
	// cache in dir, or nil when the engine has none. Nil: no cache.
	cacheFactory func(engine, dir string) spi.Factory
	// isTerminal reports whether a stream is a terminal (the matrix then
	// shows one progress line updated in place). Nil: never.
	isTerminal func(io.Writer) bool
	// missing lists the built-in engines this machine cannot run, with
	// the reason ("engines" shows them; asking for one says why). Nil:
	// none.
	missing func() []builtin.Unavailable
	// matrixOptions, when set, adjusts the conformance options of each
	// engine's matrix run (tests shorten the watchdog with it).
	matrixOptions func(*conformance.Options)
}

// builtinRegistry returns a registry holding every built-in backend.
func builtinRegistry() (*registry.Registry, error) { return registryFrom(builtin.Register) }

// registryFrom returns a new registry filled by register. A programmer
// error (an engine registered twice) makes builtin.Register panic; the
// panic becomes an error here, so the command line prints one line.
func registryFrom(register func(*registry.Registry)) (r *registry.Registry, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("registering the built-in engines: %v", p)
		}
	}()
	r = new(registry.Registry)
	register(r)
	return r, nil
}

// exitError carries the exit code of a failed command. Errors that reach
// execute without one come from cobra itself (unknown command or flag, bad
// flag value, wrong number of arguments) and are usage errors.
type exitError struct {
	code int
	err  error
	// quiet: the command already reported the failure on its own streams.
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usagef returns a usage error (exit 64).
func usagef(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// untyped returns an untyped error (exit 1).
func untyped(err error) error { return &exitError{code: exitUntyped, err: err} }

// quote is how an error quotes the caller's text (a flag's value, a name,
// a path): an excerpt of it (effect.Excerpt), quoted, so a message stays
// short whatever the caller typed.
func quote(s string) string { return strconv.Quote(effect.Excerpt(s)) }

// reason is the text of an error about the caller's file or address, as
// an error may quote it: an excerpt, without the path a *fs.PathError
// repeats.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + effect.Excerpt(pe.Err.Error())
	}
	return effect.Excerpt(err.Error())
}

// maxCobraWords bounds the words of one of cobra's own errors.
const maxCobraWords = 32

// cobraMessage bounds one of cobra's own errors, which quote the caller's
// arguments ("unknown flag: --…", "invalid argument \"…\" for …"): each
// word is at most an excerpt (effect.Excerpt), and at most maxCobraWords
// words are kept.
func cobraMessage(msg string) string {
	words := strings.Fields(formatCobraError(msg))
	cut := len(words) > maxCobraWords
	if cut {
		words = words[:maxCobraWords]
	}
	for i, w := range words {
		words[i] = effect.Excerpt(w)
	}
	if cut {
		words = append(words, "…")
	}
	return strings.Join(words, " ")
}

func (a *app) execute(args []string) (code int) {
	defer func() {
		// A panic anywhere below (a backend, a half-built dependency) is
		// reported as one line, never as a stack trace.
		if p := recover(); p != nil {
			fmt.Fprintf(a.stderr, "sandbank: internal error: %s\n", oneLine(fmt.Sprint(p)))
			code = exitUntyped
		}
	}()
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		path := root.CommandPath()
		if cmd != nil {
			path = cmd.CommandPath()
		}
		ee = &exitError{code: exitUsage, err: fmt.Errorf("%s (see '%s --help')", cobraMessage(err.Error()), path)}
	}
	if !ee.quiet {
		fmt.Fprintf(a.stderr, "sandbank: %s\n", oneLine(ee.err.Error()))
	}
	return ee.code
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "sandbank",
		Short: "Run untrusted scripts behind one set of guarantees",
		Long: `sandbank runs untrusted, model-written scripts (JavaScript,
TypeScript, Python, Starlark, WebAssembly) through the Sandbank effect, as
a command, an HTTP server or an MCP server; prints the verified conformance
matrix of every built-in engine; and scaffolds new backends.

Exit codes: 0 success; 1 infrastructure, retryable (or a failing
matrix); 2 typed failure (the script's own doing; with run --json its
object on stdout tells it from a crash, which Go also exits 2 on); 64
invalid request; 130/143 cancelled by SIGINT/SIGTERM.`,
		Example: `  sandbank matrix
  sandbank run --input '{"n":2}' script.js
  sandbank engines
  sandbank new backend mybox --language javascript`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = moduleVersion(debug.ReadBuildInfo())
	root.SetVersionTemplate("sandbank {{.Version}}\n")
	wrapHelp(root, a.width(a.stdout))
	root.AddCommand(
		a.runCommand(),
		a.resumeCommand(),
		a.verifyCommand(),
		a.matrixCommand(),
		a.enginesCommand(),
		a.newCommand(),
		a.versionCommand(),
		a.mcpCommand(),
		a.benchCommand(),
		a.benchColdCommand(),
		a.serveCommand(),
		a.keygenCommand(),
	)
	return root
}

// wrap makes every error a command returns carry its exit code, from
// classify, so that execute can tell them from cobra's own errors.
func wrap(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		if err == nil {
			return nil
		}
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		code, _ := classify(err)
		return &exitError{code: code, err: err}
	}
}

// registry builds the engine registry, reporting a failure as untyped.
func (a *app) registry() (*registry.Registry, error) {
	r, err := a.newRegistry()
	if err != nil {
		return nil, untyped(err)
	}
	return r, nil
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "; ")
	return strings.ReplaceAll(s, "\n", "; ")
}
