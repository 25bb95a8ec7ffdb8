package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/bench/workloads"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// Defaults of "sandbank bench". They keep the whole command well under two
// minutes on two cores with six engines.
const (
	defaultBenchRuns     = 20
	defaultColdRuns      = 3
	defaultThroughputDur = time.Second
	// echoPerRound is how many echo runs one round makes per engine: echo
	// is cheap, and its p99 needs more samples than the others.
	echoPerRound = 10
	// warmupRounds are rounds run and thrown away before measuring.
	warmupRounds = 2
	// killDeadline is the wall clock of the kill workloads.
	killDeadline = 50 * time.Millisecond
	// nativeKillMemory is the memory limit of the native kill: above the
	// 300 MB JavaScript's runaway_native builds, so that the wall clock,
	// not the memory limit, has to stop the one long native operation.
	nativeKillMemory int64 = 1 << 30
)

// defaultLimits are the limits of every call but the native kill: the
// effect's defaults.
var defaultLimits = spi.Limits{WallClock: effect.DefaultWallClock, MemoryBytes: effect.DefaultMemoryBytes}

// echoInput is the input of the echo workload.
var echoInput = json.RawMessage(`{"a":1,"b":"x"}`)

type benchOptions struct {
	engines    []string
	runs       int
	coldRuns   int
	throughput time.Duration
	asJSON     bool
}

// benchReport is the whole output of "sandbank bench --json".
type benchReport struct {
	Machine benchMachine   `json:"machine"`
	Runs    int            `json:"runs"`
	Engines []*engineBench `json:"engines"`
}

// benchMachine says where the figures were measured.
type benchMachine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	// LoadAvgStart and LoadAvgEnd are the first field of /proc/loadavg
	// (runnable processes, one-minute average) when bench started and
	// when it finished: other work on the machine skews every figure.
	// Empty where the file does not exist.
	LoadAvgStart string `json:"load_avg_start,omitempty"`
	LoadAvgEnd   string `json:"load_avg_end,omitempty"`
}

// loadAvg returns the one-minute load average, or "" when unknown.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// engineBench is one engine's figures. A section that could not be
// measured carries NA with the reason instead of figures.
type engineBench struct {
	Engine      string `json:"engine"`
	Language    string `json:"language"`
	WallClock   string `json:"wall_clock"`
	FreshPerRun bool   `json:"fresh_per_run"`

	Echo       *echoFigures       `json:"echo"`
	Reshape    *reshapeFigures    `json:"reshape"`
	Kill       *killFigures       `json:"kill"`
	KillNative *killFigures       `json:"kill_native"`
	Cold       *coldFigures       `json:"cold"`
	Throughput *throughputFigures `json:"throughput"`
	HostCall   *hostCallFigures   `json:"host_call"` // bench_host.go

	// Errors lists what went wrong while measuring (a failed run, a
	// reshape output that differs from JavaScript's).
	Errors []string `json:"errors,omitempty"`
}

type echoFigures struct {
	NA      string  `json:"na,omitempty"`
	Samples int     `json:"samples"`
	P50us   float64 `json:"p50_us"`
	P99us   float64 `json:"p99_us"`
}

type reshapeFigures struct {
	NA      string  `json:"na,omitempty"`
	Samples int     `json:"samples"`
	P50ms   float64 `json:"p50_ms"`
	// CPUP50ms is the p50 of the process's CPU time (user and system,
	// every thread) during one run; absent where the platform has no
	// getrusage. On a loaded machine it compares engines better than
	// P50ms, which counts the time spent waiting for a core.
	CPUP50ms float64 `json:"cpu_p50_ms,omitempty"`
	// MatchesJS is true when every run's value equals the JavaScript
	// result (workloads.ReshapeExpected).
	MatchesJS bool `json:"matches_js"`
}

type killFigures struct {
	NA         string  `json:"na,omitempty"`
	Fixture    string  `json:"fixture"`
	DeadlineMs float64 `json:"deadline_ms"`
	Samples    int     `json:"samples"`
	// P50ms and MaxMs are the time from calling Evaluate until it
	// returned.
	P50ms float64 `json:"p50_ms"`
	MaxMs float64 `json:"max_ms"`
	// Overshoot is the time past the deadline (negative: it returned
	// before the deadline, such as a memory limit that came first).
	OvershootP50ms float64 `json:"overshoot_p50_ms"`
	OvershootMaxms float64 `json:"overshoot_max_ms"`
	// EndedBy counts how the runs ended: "limitExceeded/wallClock",
	// "limitExceeded/memory", "value", "error", ...
	EndedBy map[string]int `json:"ended_by"`
	// LeftoverMaxMs, for an engine that reports the runs it stopped but
	// could not end (goja: a native operation goes on after Evaluate
	// returned), is the longest time from Evaluate's return until no such
	// run was left: bench waits for it after each kill, so that no other
	// figure is measured beside a leftover.
	LeftoverMaxMs float64 `json:"leftover_max_ms,omitempty"`
}

type coldFigures struct {
	Samples int `json:"samples"`
	// WithoutCache is the time from starting a new sandbank process until
	// it printed its first result, with the engine's default options.
	WithoutCacheNA    string  `json:"without_cache_na,omitempty"`
	WithoutCacheP50ms float64 `json:"without_cache_p50_ms"`
	WithoutCacheMaxms float64 `json:"without_cache_max_ms"`
	// WithCache is the same with the engine's compiled-module cache
	// directory filled by an earlier process.
	WithCacheNA    string  `json:"with_cache_na,omitempty"`
	WithCacheP50ms float64 `json:"with_cache_p50_ms"`
	WithCacheMaxms float64 `json:"with_cache_max_ms"`
}

type throughputFigures struct {
	NA         string  `json:"na,omitempty"`
	Workers    int     `json:"workers"`
	OnePerSec  float64 `json:"one_worker_per_s"`
	ManyPerSec float64 `json:"n_workers_per_s"`
	Ratio      float64 `json:"ratio"`
}

func (a *app) benchCommand() *cobra.Command {
	o := benchOptions{runs: defaultBenchRuns, coldRuns: defaultColdRuns, throughput: defaultThroughputDur}
	cmd := &cobra.Command{
		Use:   "bench [--engine NAME]... [--runs N] [--json]",
		Short: "Measure every engine: echo, reshape, kill, cold start, throughput",
		Long: `bench measures every registered engine (or the ones named with --engine)
through the Sandbank effect, on this machine, and prints one table.

Per engine, after a warm-up, in rounds (one round runs each engine once,
in rotating order, so machine noise hits all engines alike):
  echo         the language's echo fixture, input {"a":1,"b":"x"}, a new
               isolated instance per run (the engine's own mode):
               p50 and p99 in microseconds (10 runs per round)
  reshape      bench/workloads' reshape (10k rows, group, sort): p50 in
               milliseconds, wall time and the process's CPU time (--json:
               cpu_p50_ms); its value must equal the JavaScript result,
               else bench says MISMATCH and exits 1
  kill         the runaway_loop fixture with a 50 ms wall clock: time until
               Evaluate returns, p50 and max, and the overshoot past 50 ms
  kill-native  the same with runaway_native (one long native operation),
               memory limit 1 GiB so that the clock has to stop it; an
               engine that reports stopped runs still going on (goja) is
               waited for after each kill (--json: leftover_max_ms), so no
               other figure is measured beside one
Then, per engine:
  cold         a new sandbank process per sample (this binary, re-executed):
               time from starting it to its first echo result, without and
               with the engine's compiled-module cache directory (filled by
               a first process); "n/a" for engines without such an option
  throughput   reshapes per second with 1 worker and with GOMAXPROCS
               workers sharing one effect, and the ratio
  host call    the host_loop fixture's round trip per host call (script
               to host function and back): p50 and p99 in microseconds

Progress goes to stderr; the table, or with --json one JSON object, to
stdout. No figure is estimated: each is measured by this run.

Exit status 1 when a run failed or a reshape value differed.`,
		Example: `  sandbank bench
  sandbank bench --engine quickjs --engine goja --runs 50
  sandbank bench --json > bench.json`,
		Args: cobra.NoArgs,
		RunE: wrap(func(cmd *cobra.Command, _ []string) error {
			return a.bench(cmd.Context(), &o)
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.engines, "engine", nil, "measure only engine `NAME` (repeatable)")
	_ = cmd.RegisterFlagCompletionFunc("engine", a.completeEngines)
	f.IntVar(&o.runs, "runs", o.runs, "measured rounds `N` (echo runs 10 times per round)")
	f.IntVar(&o.coldRuns, "cold-runs", o.coldRuns, "new processes `N` per engine and cache mode for the cold figures")
	f.DurationVar(&o.throughput, "throughput-time", o.throughput, "how long each throughput measurement runs")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object on stdout")
	return cmd
}

// benchEngine is one engine under measurement.
type benchEngine struct {
	entry   registry.Entry
	fig     *engineBench
	eff     *effect.Effect
	echo    record.Address
	reshape record.Address // empty without a reshape translation
	loop    record.Address // empty without the fixture
	native  record.Address

	echoSamples, reshapeSamples []time.Duration
	reshapeCPU                  []time.Duration // processCPU during each kept reshape
	loopKill, nativeKill        killSamples
	reshapeMatches              bool
	leftovers                   leftovers // nil unless the backend reports them
}

type killSamples struct {
	d        []time.Duration
	endedBy  map[string]int
	leftover []time.Duration // how long a stopped run went on (leftovers)
}

// leftovers is implemented by a backend whose stopped runs may go on after
// Evaluate returned (goja's Leftovers).
type leftovers interface{ Leftovers() int }

// leftoverWait bounds how long bench waits for an engine's stopped runs
// to end after a kill.
const leftoverWait = 2 * time.Minute

func (a *app) bench(ctx context.Context, o *benchOptions) error {
	switch {
	case o.runs < 1:
		return usagef("--runs must be at least 1")
	case o.coldRuns < 0:
		return usagef("--cold-runs must not be negative")
	case o.throughput <= 0:
		return usagef("--throughput-time must be positive")
	}
	reg, err := a.registry()
	if err != nil {
		return err
	}
	entries, err := selectEngines(reg, o.engines)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	report := &benchReport{
		Machine: benchMachine{
			GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(),
			GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
			LoadAvgStart: loadAvg(),
		},
		Runs: o.runs,
	}
	var engines []*benchEngine
	defer func() {
		for _, e := range engines {
			if e.eff != nil {
				_ = e.eff.Close()
			}
		}
	}()
	for _, entry := range entries {
		e := a.prepareEngine(ctx, entry)
		engines = append(engines, e)
		report.Engines = append(report.Engines, e.fig)
	}

	// Warm-up, then the measured rounds.
	for r := 0; r < warmupRounds; r++ {
		a.progress("warm-up %d/%d", r+1, warmupRounds)
		for _, e := range engines {
			e.round(ctx, 1, false)
		}
	}
	for r := 0; r < o.runs; r++ {
		if err := ctx.Err(); err != nil {
			return untyped(err)
		}
		if r%5 == 0 || r == o.runs-1 {
			a.progress("round %d/%d", r+1, o.runs)
		}
		for i := range engines {
			engines[(i+r)%len(engines)].round(ctx, echoPerRound, true)
		}
	}
	for _, e := range engines {
		e.summarize()
	}
	for _, e := range engines {
		if err := ctx.Err(); err != nil {
			return untyped(err)
		}
		a.progress("[%s] cold start", e.entry.Engine)
		e.fig.Cold = a.measureCold(ctx, e, o.coldRuns)
		a.progress("[%s] throughput", e.entry.Engine)
		e.fig.Throughput = e.measureThroughput(ctx, o.throughput)
		a.progress("[%s] host calls", e.entry.Engine)
		e.fig.HostCall = a.measureHostCalls(ctx, e)
	}
	if err := ctx.Err(); err != nil {
		return untyped(err)
	}
	report.Machine.LoadAvgEnd = loadAvg()

	if o.asJSON {
		if err := a.printJSON(report); err != nil {
			return err
		}
	} else if err := printBench(a, report); err != nil {
		return untyped(err)
	}
	failed := 0
	for _, e := range report.Engines {
		if len(e.Errors) > 0 {
			failed++
			for _, msg := range e.Errors {
				fmt.Fprintf(a.stderr, "sandbank: bench: %s: %s\n", e.Engine, msg)
			}
		}
	}
	if failed > 0 {
		return &exitError{code: exitUntyped, err: fmt.Errorf("bench: %d of %d engines had errors", failed, len(report.Engines)), quiet: false}
	}
	return nil
}

func (a *app) progress(format string, args ...any) {
	fmt.Fprintf(a.stderr, "bench: "+format+"\n", args...)
}

// selectEngines returns every registered engine, or the named ones in the
// order given (each once).
func selectEngines(reg *registry.Registry, names []string) ([]registry.Entry, error) {
	if len(names) == 0 {
		return reg.Engines(), nil
	}
	var out []registry.Entry
	for _, name := range names {
		e, err := lookupEngine(reg, name)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(out, func(x registry.Entry) bool { return x.Engine == name }) {
			out = append(out, e)
		}
	}
	return out, nil
}

// prepareEngine builds the engine's effect and stores its scripts. A
// problem is recorded in the figures; the engine then has no effect and
// every section says why.
func (a *app) prepareEngine(ctx context.Context, entry registry.Entry) *benchEngine {
	e := &benchEngine{
		entry: entry,
		fig: &engineBench{
			Engine: entry.Engine, Language: entry.Language,
			WallClock: entry.Capabilities.WallClock.String(), FreshPerRun: entry.Capabilities.FreshPerRun,
		},
		loopKill:       killSamples{endedBy: map[string]int{}},
		nativeKill:     killSamples{endedBy: map[string]int{}},
		reshapeMatches: true,
	}
	fail := func(err error) *benchEngine {
		msg := oneLine(err.Error())
		e.fig.Errors = append(e.fig.Errors, msg)
		e.fig.Echo = &echoFigures{NA: "engine not built: " + msg}
		e.fig.Reshape = &reshapeFigures{NA: "engine not built: " + msg}
		e.fig.Kill = &killFigures{NA: "engine not built: " + msg, Fixture: "runaway_loop"}
		e.fig.KillNative = &killFigures{NA: "engine not built: " + msg, Fixture: "runaway_native"}
		return e
	}
	store := new(storage.MemoryStore)
	set, ok := a.fixtures(entry.Language)
	if !ok {
		return fail(fmt.Errorf("no fixture set for language %s", entry.Language))
	}
	put := func(b []byte) (record.Address, error) { return store.Put(b) }
	script, err := set.Script("echo")
	if err != nil {
		return fail(err)
	}
	if e.echo, err = put(script); err != nil {
		return fail(err)
	}
	if script, err := set.Script("runaway_loop"); err == nil {
		if e.loop, err = put(script); err != nil {
			return fail(err)
		}
	}
	if script, err := set.Script("runaway_native"); err == nil {
		if e.native, err = put(script); err != nil {
			return fail(err)
		}
	}
	if script, ok := workloads.Reshape(entry.Language); ok {
		if e.reshape, err = put(script); err != nil {
			return fail(err)
		}
	}
	backend, err := entry.Factory()
	if err != nil {
		return fail(fmt.Errorf("building the backend: %w", err))
	}
	e.leftovers, _ = backend.(leftovers)
	// The benchmark measures every engine as registered, whatever it
	// declares: the table prints the declaration next to the figures.
	// The ceiling admits the native kill's memory; every other call asks
	// for the effect's default memory limit.
	e.eff, err = effect.New(store, backend, &effect.Options{
		Limits:       spi.Limits{MemoryBytes: nativeKillMemory},
		AllowNetwork: true, AllowReusedEnvironment: true,
	})
	if err != nil {
		closeBackend(backend)
		return fail(err)
	}
	if err := e.eff.Warm(ctx); err != nil {
		e.fig.Errors = append(e.fig.Errors, "warm: "+oneLine(err.Error()))
	}
	return e
}

// round runs one round of the engine: echo n times, reshape, kill and
// kill-native once each; keep says whether the samples count.
func (e *benchEngine) round(ctx context.Context, n int, keep bool) {
	if e.eff == nil {
		return
	}
	for i := 0; i < n; i++ {
		start := time.Now()
		v, err := e.eff.Evaluate(ctx, effect.Call{Script: e.echo, Input: echoInput, Limits: defaultLimits})
		d := time.Since(start)
		if err != nil {
			e.addError("echo: " + oneLine(err.Error()))
			continue
		}
		if !sameJSON(v, echoInput) {
			e.addError("echo: the value differs from the input")
			continue
		}
		if keep {
			e.echoSamples = append(e.echoSamples, d)
		}
	}
	if e.reshape != "" {
		start, cpu0 := time.Now(), processCPU()
		v, err := e.eff.Evaluate(ctx, effect.Call{Script: e.reshape, Input: json.RawMessage("null"), Limits: defaultLimits})
		d, cpu := time.Since(start), processCPU()-cpu0
		switch {
		case err != nil:
			e.addError("reshape: " + oneLine(err.Error()))
		case !sameJSON(v, workloads.ReshapeExpected()):
			e.reshapeMatches = false
			e.addError("reshape: MISMATCH: the value differs from the JavaScript result")
		case keep:
			e.reshapeSamples = append(e.reshapeSamples, d)
			e.reshapeCPU = append(e.reshapeCPU, cpu)
		}
	}
	e.kill(ctx, e.loop, spi.Limits{WallClock: killDeadline}, &e.loopKill, keep)
	e.kill(ctx, e.native, spi.Limits{WallClock: killDeadline, MemoryBytes: nativeKillMemory}, &e.nativeKill, keep)
}

// kill runs a runaway script with limits (the kill deadline) and times
// Evaluate.
func (e *benchEngine) kill(ctx context.Context, script record.Address, limits spi.Limits, s *killSamples, keep bool) {
	if script == "" {
		return
	}
	start := time.Now()
	_, err := e.eff.Evaluate(ctx, effect.Call{Script: script, Input: json.RawMessage("null"), Limits: limits})
	d := time.Since(start)
	if ctx.Err() != nil {
		return
	}
	left := e.waitLeftovers(ctx)
	if keep {
		s.d = append(s.d, d)
		s.endedBy[endedBy(err)]++
		if e.leftovers != nil {
			s.leftover = append(s.leftover, left)
		}
	}
}

// waitLeftovers waits until the engine reports no stopped run still going
// on (at most leftoverWait; past it the run is an error) and returns how
// long that took. Engines that do not report leftovers return at once.
func (e *benchEngine) waitLeftovers(ctx context.Context) time.Duration {
	if e.leftovers == nil {
		return 0
	}
	start := time.Now()
	for e.leftovers.Leftovers() > 0 {
		if time.Since(start) > leftoverWait {
			e.addError("a stopped run still going on after " + leftoverWait.String())
			break
		}
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-time.After(time.Millisecond):
		}
	}
	return time.Since(start)
}

// endedBy names how a run ended.
func endedBy(err error) string {
	var f *effect.Failure
	switch {
	case err == nil:
		return "value"
	case errors.As(err, &f):
		if f.Code == record.CodeLimitExceeded {
			return f.Code.String() + "/" + f.Kind.String()
		}
		return f.Code.String()
	default:
		return "error"
	}
}

// addError records an error once per distinct message.
func (e *benchEngine) addError(msg string) {
	if !slices.Contains(e.fig.Errors, msg) {
		e.fig.Errors = append(e.fig.Errors, msg)
	}
}

// summarize turns the samples into figures.
func (e *benchEngine) summarize() {
	if e.eff == nil {
		return
	}
	f := e.fig
	if len(e.echoSamples) == 0 {
		f.Echo = &echoFigures{NA: "no successful run"}
	} else {
		f.Echo = &echoFigures{
			Samples: len(e.echoSamples),
			P50us:   micros(percentile(e.echoSamples, 0.50)),
			P99us:   micros(percentile(e.echoSamples, 0.99)),
		}
	}
	switch {
	case e.reshape == "":
		f.Reshape = &reshapeFigures{NA: "no reshape translation for " + e.entry.Language}
	case len(e.reshapeSamples) == 0:
		f.Reshape = &reshapeFigures{NA: "no successful run", MatchesJS: e.reshapeMatches}
	default:
		f.Reshape = &reshapeFigures{
			Samples: len(e.reshapeSamples), P50ms: millis(percentile(e.reshapeSamples, 0.50)),
			MatchesJS: e.reshapeMatches,
		}
		if processCPU() > 0 {
			f.Reshape.CPUP50ms = millis(percentile(e.reshapeCPU, 0.50))
		}
	}
	f.Kill = killFigure("runaway_loop", e.loop, &e.loopKill)
	f.KillNative = killFigure("runaway_native", e.native, &e.nativeKill)
}

func killFigure(fixture string, script record.Address, s *killSamples) *killFigures {
	k := &killFigures{Fixture: fixture, DeadlineMs: millis(killDeadline), EndedBy: s.endedBy}
	switch {
	case script == "":
		k.NA = "no " + fixture + " fixture for this language"
	case len(s.d) == 0:
		k.NA = "no run finished"
	default:
		k.Samples = len(s.d)
		k.P50ms = millis(percentile(s.d, 0.50))
		k.MaxMs = millis(slices.Max(s.d))
		k.OvershootP50ms = k.P50ms - k.DeadlineMs
		k.OvershootMaxms = k.MaxMs - k.DeadlineMs
		if len(s.leftover) > 0 {
			k.LeftoverMaxMs = millis(slices.Max(s.leftover))
		}
	}
	return k
}

// measureThroughput runs reshape on one worker, then on GOMAXPROCS
// workers, each for d, all sharing the engine's effect.
func (e *benchEngine) measureThroughput(ctx context.Context, d time.Duration) *throughputFigures {
	switch {
	case e.eff == nil:
		return &throughputFigures{NA: "engine not built"}
	case e.reshape == "":
		return &throughputFigures{NA: "no reshape translation for " + e.entry.Language}
	}
	workers := runtime.GOMAXPROCS(0)
	one, err := e.reshapesPerSecond(ctx, 1, d)
	if err != nil {
		e.addError("throughput: " + oneLine(err.Error()))
		return &throughputFigures{NA: "a run failed: " + oneLine(err.Error())}
	}
	many, err := e.reshapesPerSecond(ctx, workers, d)
	if err != nil {
		e.addError("throughput: " + oneLine(err.Error()))
		return &throughputFigures{NA: "a run failed: " + oneLine(err.Error())}
	}
	t := &throughputFigures{Workers: workers, OnePerSec: round2(one), ManyPerSec: round2(many)}
	if one > 0 {
		t.Ratio = round2(many / one)
	}
	return t
}

// reshapesPerSecond starts workers that run reshape until d has passed
// (each at least once) and returns completed runs per second of the elapsed time (until the
// last worker finished its last run).
func (e *benchEngine) reshapesPerSecond(ctx context.Context, workers int, d time.Duration) (float64, error) {
	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	end := start.Add(d)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every worker completes at least one run, even one that
			// starts after end on a loaded machine: a figure is never 0
			// because a goroutine was scheduled late.
			for first := true; ctx.Err() == nil && (first || time.Now().Before(end)); first = false {
				_, err := e.eff.Evaluate(ctx, effect.Call{Script: e.reshape, Input: json.RawMessage("null"), Limits: defaultLimits})
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return float64(done.Load()) / elapsed.Seconds(), nil
}

// sameJSON reports whether two JSON texts decode to equal values.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// percentile returns the nearest-rank p-quantile of ds (not modified).
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func micros(d time.Duration) float64 { return round2(float64(d) / float64(time.Microsecond)) }
func millis(d time.Duration) float64 { return round2(float64(d) / float64(time.Millisecond)) }
func round2(x float64) float64       { return math.Round(x*100) / 100 }
