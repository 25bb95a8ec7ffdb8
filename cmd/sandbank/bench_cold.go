package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/storage"
)

// The cold figures re-execute this binary in the hidden "bench-cold" mode,
// so that every sample is a real new process. Tests replace these.
var (
	// benchExecutable returns the program to re-execute.
	benchExecutable = os.Executable
	// benchChildEnv is added to the environment of every child.
	benchChildEnv []string
	// benchCacheFactory returns a factory of engine whose compiled-module
	// cache lives in dir, or nil when the engine has no such option.
	benchCacheFactory = builtin.CacheFactory
)

// coldTimeout bounds one child process.
const coldTimeout = 2 * time.Minute

// noCacheOption lists the built-in engines known to have no compiled-module
// cache directory option: goja and starlark compile nothing to machine
// code, and extism keeps its compilation cache in memory only.
var noCacheOption = []string{"extism", "goja", "starlark"}

// coldResult is the one line a bench-cold child prints.
type coldResult struct {
	OK    bool            `json:"ok"`
	Value json.RawMessage `json:"value,omitempty"`
	Error string          `json:"error,omitempty"`
}

// benchColdCommand is the hidden child mode of "sandbank bench": it runs
// the echo fixture of one engine once, prints one JSON line and exits.
func (a *app) benchColdCommand() *cobra.Command {
	var engine, cacheDir string
	cmd := &cobra.Command{
		Use:    "bench-cold --engine NAME [--cache-dir DIR]",
		Short:  "Internal: one cold run for sandbank bench",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: wrap(func(cmd *cobra.Command, _ []string) error {
			return a.benchCold(cmd.Context(), engine, cacheDir)
		}),
	}
	cmd.Flags().StringVar(&engine, "engine", "", "engine `NAME`")
	cmd.Flags().StringVar(&cacheDir, "cache-dir", "", "compiled-module cache `DIR`")
	return cmd
}

func (a *app) benchCold(ctx context.Context, engine, cacheDir string) error {
	if engine == "" {
		return usagef("bench-cold needs --engine")
	}
	reg, err := a.registry()
	if err != nil {
		return err
	}
	entry, err := lookupEngine(reg, engine)
	if err != nil {
		return err
	}
	// Without --cache-dir the engine keeps nothing on disk (a cold start
	// without a cache), not even in the default directory.
	factory := benchCacheFactory(engine, cacheDir)
	switch {
	case factory == nil && cacheDir != "":
		return usagef("engine %s has no compiled-module cache option", engine)
	case factory == nil:
		factory = entry.Factory
	}
	set, ok := a.fixtures(entry.Language)
	if !ok {
		return untyped(fmt.Errorf("no fixture set for language %s", entry.Language))
	}
	script, err := set.Script("echo")
	if err != nil {
		return untyped(err)
	}
	store := new(storage.MemoryStore)
	addr, err := store.Put(script)
	if err != nil {
		return untyped(err)
	}
	backend, err := factory()
	if err != nil {
		return untyped(fmt.Errorf("building the backend: %w", err))
	}
	eff, err := effect.New(store, backend, &effect.Options{AllowNetwork: true, AllowReusedEnvironment: true})
	if err != nil {
		closeBackend(backend)
		return untyped(err)
	}
	defer eff.Close()
	if ctx == nil {
		ctx = context.Background()
	}
	v, err := eff.Evaluate(ctx, effect.Call{Script: addr, Input: echoInput})
	if err != nil {
		perr := a.printJSON(coldResult{Error: oneLine(err.Error())})
		if perr != nil {
			return perr
		}
		return &exitError{code: exitUntyped, err: err, quiet: true}
	}
	return a.printJSON(coldResult{OK: true, Value: v})
}

// measureCold times new processes running the engine's echo once, without
// and with its compiled-module cache.
func (a *app) measureCold(ctx context.Context, e *benchEngine, samples int) *coldFigures {
	entry := e.entry
	c := &coldFigures{Samples: samples}
	if samples == 0 {
		c.WithoutCacheNA = "--cold-runs 0"
		c.WithCacheNA = "--cold-runs 0"
		return c
	}
	exe, err := benchExecutable()
	if err != nil {
		c.WithoutCacheNA = "cannot find this program: " + oneLine(err.Error())
		c.WithCacheNA = c.WithoutCacheNA
		return c
	}
	ds, err := coldSamples(ctx, exe, entry.Engine, "", samples)
	if err != nil {
		c.WithoutCacheNA = "failed: " + oneLine(err.Error())
		a.addColdError(e, err)
	} else {
		c.WithoutCacheP50ms = millis(percentile(ds, 0.5))
		c.WithoutCacheMaxms = millis(slices.Max(ds))
	}

	a.measureColdWithCache(ctx, e, exe, samples, c)
	return c
}

// measureColdWithCache fills in the with-cache figures of c.
func (a *app) measureColdWithCache(ctx context.Context, e *benchEngine, exe string, samples int, c *coldFigures) {
	entry := e.entry
	reason, factoryOK := cacheFactoryMatches(entry)
	if !factoryOK {
		c.WithCacheNA = reason
		return
	}
	dir, err := os.MkdirTemp("", "sandbank-bench-cache-*")
	if err != nil {
		c.WithCacheNA = "failed: " + oneLine(err.Error())
		return
	}
	defer os.RemoveAll(dir)
	// The first process fills the cache; it is not a sample.
	if _, err := coldSamples(ctx, exe, entry.Engine, dir, 1); err != nil {
		c.WithCacheNA = "failed: " + oneLine(err.Error())
		a.addColdError(e, err)
		return
	}
	if empty, err := dirEmpty(dir); err != nil || empty {
		c.WithCacheNA = "failed: the first process left the cache directory empty"
		a.addColdError(e, fmt.Errorf("the cache directory stayed empty"))
		return
	}
	ds, err := coldSamples(ctx, exe, entry.Engine, dir, samples)
	if err != nil {
		c.WithCacheNA = "failed: " + oneLine(err.Error())
		a.addColdError(e, err)
		return
	}
	c.WithCacheP50ms = millis(percentile(ds, 0.5))
	c.WithCacheMaxms = millis(slices.Max(ds))
}

// addColdError records a failed cold measurement on the engine.
func (a *app) addColdError(e *benchEngine, err error) {
	e.addError("cold: " + oneLine(err.Error()))
}

// cacheFactoryMatches reports whether the engine has a cache factory that
// builds the registered engine (same backend type, same capabilities), and
// else why not.
func cacheFactoryMatches(entry registry.Entry) (string, bool) {
	probeDir, err := os.MkdirTemp("", "sandbank-bench-probe-*")
	if err != nil {
		return "failed: " + oneLine(err.Error()), false
	}
	defer os.RemoveAll(probeDir)
	f := benchCacheFactory(entry.Engine, probeDir)
	if f == nil {
		if slices.Contains(noCacheOption, entry.Engine) {
			return "no cache option", false
		}
		return "no cache option wired into bench for this engine", false
	}
	withCache, err := f()
	if err != nil {
		return "failed: " + oneLine(err.Error()), false
	}
	defer closeBackend(withCache)
	registered, err := entry.Factory()
	if err != nil {
		return "failed: " + oneLine(err.Error()), false
	}
	defer closeBackend(registered)
	if reflect.TypeOf(withCache) != reflect.TypeOf(registered) || withCache.Capabilities() != registered.Capabilities() {
		return "the cache factory does not build the registered engine", false
	}
	return "", true
}

// coldSamples starts n child processes one after the other and returns, for
// each, the time from starting it to reading its result line.
func coldSamples(ctx context.Context, exe, engine, cacheDir string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		d, err := coldOnce(ctx, exe, engine, cacheDir)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func coldOnce(ctx context.Context, exe, engine, cacheDir string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, coldTimeout)
	defer cancel()
	args := []string{"bench-cold", "--engine", engine}
	if cacheDir != "" {
		args = append(args, "--cache-dir", cacheDir)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), benchChildEnv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	line, rerr := bufio.NewReader(stdout).ReadBytes('\n')
	d := time.Since(start)
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	var res coldResult
	switch {
	case rerr != nil && len(line) == 0:
		return 0, fmt.Errorf("the child printed no result (%v; stderr: %s)", werr, shorten(oneLine(stderr.String())))
	case json.Unmarshal(line, &res) != nil:
		return 0, fmt.Errorf("the child printed no JSON result")
	case !res.OK:
		return 0, fmt.Errorf("the child's run failed: %s", shorten(res.Error))
	case !sameJSON(res.Value, echoInput):
		return 0, fmt.Errorf("the child's echo value differs from its input")
	case werr != nil:
		return 0, fmt.Errorf("the child failed after its result: %v", werr)
	}
	return d, nil
}

func dirEmpty(dir string) (bool, error) {
	es, err := os.ReadDir(dir)
	return len(es) == 0, err
}

// printBench writes the table and, after it, every n/a reason, how the
// kill runs ended, and the errors.
func printBench(a *app, r *benchReport) error {
	m := r.Machine
	width := a.width(a.stdout)
	title := fmt.Sprintf("sandbank bench: %d rounds, %s/%s, %d CPUs, GOMAXPROCS %d, %s", r.Runs, m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS, m.GoVersion)
	if m.LoadAvgStart != "" {
		title += fmt.Sprintf(", load average %s at start, %s at end", m.LoadAvgStart, m.LoadAvgEnd)
	}
	writeWrappedTo(a.stdout, width, "", title)
	fmt.Fprintln(a.stdout)
	head := []string{"ENGINE", "WALLCLOCK", "ECHO p50 µs", "ECHO p99 µs", "RESHAPE p50 ms", "KILL p50 ms", "KILL max ms", "NATIVE KILL p50 ms", "NATIVE KILL max ms", "COLD ms", "COLD+CACHE ms", "RESHAPE/s 1w", "RESHAPE/s Nw", "SCALING"}
	var rows [][]string
	var notes []string
	na := func(engine, what, reason string) string {
		notes = append(notes, fmt.Sprintf("%s %s: n/a (%s)", engine, what, reason))
		return "n/a"
	}
	num := func(x float64) string { return fmt.Sprintf("%.1f", x) }
	for _, e := range r.Engines {
		cells := []string{e.Engine, e.WallClock}
		if e.Echo.NA != "" {
			cells = append(cells, na(e.Engine, "echo", e.Echo.NA), "n/a")
		} else {
			cells = append(cells, num(e.Echo.P50us), num(e.Echo.P99us))
		}
		switch {
		case e.Reshape.NA != "":
			cells = append(cells, na(e.Engine, "reshape", e.Reshape.NA))
		case !e.Reshape.MatchesJS:
			cells = append(cells, num(e.Reshape.P50ms)+" MISMATCH")
		default:
			cells = append(cells, num(e.Reshape.P50ms))
		}
		for _, k := range []*killFigures{e.Kill, e.KillNative} {
			if k.NA != "" {
				cells = append(cells, na(e.Engine, k.Fixture, k.NA), "n/a")
				continue
			}
			cells = append(cells, num(k.P50ms), num(k.MaxMs))
			notes = append(notes, fmt.Sprintf("%s %s (deadline %.0f ms, %s clock): overshoot p50 %+.1f ms, max %+.1f ms; ended by %s",
				e.Engine, k.Fixture, k.DeadlineMs, e.WallClock, k.OvershootP50ms, k.OvershootMaxms, endedByText(k.EndedBy)))
		}
		c := e.Cold
		if c.WithoutCacheNA != "" {
			cells = append(cells, na(e.Engine, "cold", c.WithoutCacheNA))
		} else {
			cells = append(cells, num(c.WithoutCacheP50ms))
		}
		if c.WithCacheNA != "" {
			cells = append(cells, na(e.Engine, "cold with cache", c.WithCacheNA))
		} else {
			cells = append(cells, num(c.WithCacheP50ms))
		}
		t := e.Throughput
		if t.NA != "" {
			cells = append(cells, na(e.Engine, "throughput", t.NA), "n/a", "n/a")
		} else {
			cells = append(cells, num(t.OnePerSec), fmt.Sprintf("%.1f (%dw)", t.ManyPerSec, t.Workers), fmt.Sprintf("%.2fx", t.Ratio))
		}
		rows = append(rows, cells)
	}
	// Fitted to the terminal, or to 80 columns when stdout is not one.
	if err := writeFitted(a.stdout, width, head, rows); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout)
	writeWrappedTo(a.stdout, width, "", "echo: µs per run through the effect, new instance per run; reshape: ms per run; kill: ms from calling Evaluate "+
		"until it returned, deadline 50 ms; cold: ms from starting a new process to its first result (p50 of the "+
		"samples); RESHAPE/s: reshapes per second with 1 and N workers; SCALING: N workers / 1 worker.")
	fmt.Fprintln(a.stdout)
	if err := printHostCalls(a.stdout, width, r); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(a.stdout)
		for _, n := range notes {
			writeWrappedTo(a.stdout, width, "  ", n)
		}
	}
	return nil
}

func endedByText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
