package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/bench/workloads"
	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/internal/wasm/cache/cachetest"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// childEnv makes the test binary act as the sandbank binary (see
// TestMain), so that "bench" can re-execute it for the cold figures.
const childEnv = "SANDBANK_BENCH_TEST_CHILD"

// fakeCacheEnv makes the child use fakeCacheFactory.
const fakeCacheEnv = "SANDBANK_BENCH_TEST_FAKE_CACHE"

// realChildEnv makes the test binary act as the real sandbank binary, with
// every built-in engine (see runMainInChild).
const realChildEnv = "SANDBANK_TEST_REAL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(realChildEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv(fakeChildEnv) == "1" {
		a := &app{
			stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
			newRegistry: fakeRegistry(&recorder{}, childDirective),
			fixtures:    func(string) (*fixtures.Set, bool) { return nil, false },
		}
		os.Exit(a.execute(os.Args[1:]))
	}
	if os.Getenv(childEnv) == "1" {
		switch os.Getenv(fakeCacheEnv) {
		case "1":
			benchCacheFactory = fakeCacheFactory
		case "nofill":
			benchCacheFactory = func(engine, _ string) spi.Factory {
				return func() (spi.Backend, error) { return starlark.New(nil) }
			}
		}
		// The child's registry holds only the engines the tests measure, so
		// that a child process starts fast under -race.
		a := &app{
			stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
			newRegistry: func() (*registry.Registry, error) {
				r := new(registry.Registry)
				for name, f := range map[string]spi.Factory{
					"goja":     func() (spi.Backend, error) { return goja.New(nil) },
					"starlark": func() (spi.Backend, error) { return starlark.New(nil) },
				} {
					b, err := f()
					if err != nil {
						return nil, err
					}
					caps := b.Capabilities()
					r.Register(registry.Entry{Engine: name, Language: caps.Language, Capabilities: caps, Factory: f})
				}
				return r, nil
			},
			fixtures: builtin.Fixtures,
		}
		os.Exit(a.execute(os.Args[1:]))
	}
	os.Exit(cachetest.Main(m)) // the engines' default cache directory is a temporary one
}

// fakeCacheFactory gives the starlark engine a "cache directory": the
// factory writes a file into it, so the parent can see the directory
// reached the child and was filled by the first process.
func fakeCacheFactory(engine, dir string) spi.Factory {
	if engine != "starlark" {
		return nil
	}
	return func() (spi.Backend, error) {
		if dir == "" { // no cache
			return starlark.New(nil)
		}
		if err := os.WriteFile(filepath.Join(dir, "filled"), []byte("x"), 0o644); err != nil {
			return nil, err
		}
		return starlark.New(nil)
	}
}

// asChild makes bench re-execute the test binary in child mode.
func asChild(t *testing.T, extraEnv ...string) {
	t.Helper()
	oldExe, oldEnv, oldCache := benchExecutable, benchChildEnv, benchCacheFactory
	t.Cleanup(func() { benchExecutable, benchChildEnv, benchCacheFactory = oldExe, oldEnv, oldCache })
	benchExecutable = func() (string, error) { return os.Args[0], nil }
	benchChildEnv = append([]string{childEnv + "=1"}, extraEnv...)
}

// quick are the flags that keep a bench run short in tests.
var quick = []string{"--runs", "1", "--cold-runs", "1", "--throughput-time", "20ms"}

func decodeBench(t *testing.T, stdout string) benchReport {
	t.Helper()
	var r benchReport
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&r), stdout)
	return r
}

// assertFigures checks that every section of e is there and carries
// either its figures or an n/a reason.
func assertFigures(t *testing.T, e *engineBench) {
	t.Helper()
	require.NotNil(t, e.Echo, e.Engine)
	require.NotNil(t, e.Reshape, e.Engine)
	require.NotNil(t, e.Kill, e.Engine)
	require.NotNil(t, e.KillNative, e.Engine)
	require.NotNil(t, e.Cold, e.Engine)
	require.NotNil(t, e.Throughput, e.Engine)
	if e.Echo.NA == "" {
		assert.Positive(t, e.Echo.Samples, e.Engine)
		assert.Positive(t, e.Echo.P50us, e.Engine)
		assert.GreaterOrEqual(t, e.Echo.P99us, e.Echo.P50us, e.Engine)
	}
	if e.Reshape.NA == "" {
		assert.Positive(t, e.Reshape.P50ms, e.Engine)
	}
	for _, k := range []*killFigures{e.Kill, e.KillNative} {
		assert.NotEmpty(t, k.Fixture)
		assert.Equal(t, 50.0, k.DeadlineMs)
		if k.NA == "" {
			assert.Positive(t, k.Samples, e.Engine)
			assert.Positive(t, k.P50ms, e.Engine)
			assert.GreaterOrEqual(t, k.MaxMs, k.P50ms, e.Engine)
			assert.InDelta(t, k.P50ms-50, k.OvershootP50ms, 0.011, e.Engine)
			n := 0
			for _, c := range k.EndedBy {
				n += c
			}
			assert.Equal(t, k.Samples, n, "every kill run says how it ended")
		}
	}
	if e.Cold.WithoutCacheNA == "" {
		assert.Positive(t, e.Cold.WithoutCacheP50ms, e.Engine)
	}
	if e.Cold.WithCacheNA == "" {
		assert.Positive(t, e.Cold.WithCacheP50ms, e.Engine)
	}
	if e.Throughput.NA == "" {
		assert.Positive(t, e.Throughput.OnePerSec, e.Engine)
		assert.Positive(t, e.Throughput.ManyPerSec, e.Engine)
		assert.Positive(t, e.Throughput.Ratio, e.Engine)
		assert.GreaterOrEqual(t, e.Throughput.Workers, 1)
	}
}

// TestBenchRealEngines runs bench --json on two real engines, with real
// child processes for the cold figures, and checks that every figure is
// there. It asserts structure, never a timing.
func TestBenchRealEngines(t *testing.T) {
	asChild(t)
	a := &app{newRegistry: builtinRegistry, fixtures: builtin.Fixtures}
	res := cli(a, "", append([]string{"bench", "--json", "--engine", "starlark", "--engine", "goja"}, quick...)...)
	require.Equal(t, exitOK, res.code, res.stderr)
	r := decodeBench(t, res.stdout)
	assert.Equal(t, 1, r.Runs)
	assert.Positive(t, r.Machine.GOMAXPROCS)
	require.Len(t, r.Engines, 2)
	assert.Equal(t, "starlark", r.Engines[0].Engine, "the order of --engine")
	assert.Equal(t, "goja", r.Engines[1].Engine)
	for _, e := range r.Engines {
		assertFigures(t, e)
		assert.Empty(t, e.Errors)
		assert.Empty(t, e.Echo.NA, e.Engine)
		assert.Equal(t, echoPerRound, e.Echo.Samples, e.Engine)
		assert.Empty(t, e.Reshape.NA, e.Engine)
		assert.True(t, e.Reshape.MatchesJS, e.Engine)
		assert.Empty(t, e.Kill.NA, e.Engine)
		assert.Empty(t, e.Cold.WithoutCacheNA, e.Engine)
		assert.Equal(t, "no cache option", e.Cold.WithCacheNA, e.Engine)
		assert.Empty(t, e.Throughput.NA, e.Engine)
	}
	assert.Contains(t, res.stderr, "bench: round 1/1")
}

// TestBenchColdWithCache checks the cache path: the directory reaches the
// child, the first process fills it, and the samples come after.
func TestBenchColdWithCache(t *testing.T) {
	reg, err := builtinRegistry()
	require.NoError(t, err)
	entry, err := reg.Lookup("starlark")
	require.NoError(t, err)
	a := &app{newRegistry: builtinRegistry, fixtures: builtin.Fixtures}

	asChild(t, fakeCacheEnv+"=1")
	benchCacheFactory = fakeCacheFactory
	e := &benchEngine{entry: entry, fig: &engineBench{Engine: "starlark"}}
	c := a.measureCold(context.Background(), e, 1)
	assert.Empty(t, e.fig.Errors)
	assert.Equal(t, 1, c.Samples)
	assert.Empty(t, c.WithoutCacheNA)
	assert.Empty(t, c.WithCacheNA)
	assert.Positive(t, c.WithCacheP50ms)
	assert.GreaterOrEqual(t, c.WithCacheMaxms, c.WithCacheP50ms)

	// A child that cannot use the cache directory is reported, not
	// measured, and is an error of the engine.
	asChild(t) // the child keeps the real factory: starlark has none
	benchCacheFactory = fakeCacheFactory
	e = &benchEngine{entry: entry, fig: &engineBench{Engine: "starlark"}}
	c = &coldFigures{}
	a.measureColdWithCache(context.Background(), e, os.Args[0], 1, c)
	assert.Contains(t, c.WithCacheNA, "failed")
	assert.Zero(t, c.WithCacheP50ms)
	assert.NotEmpty(t, e.fig.Errors)

	// A child that runs but leaves the directory empty measured no cache.
	asChild(t, fakeCacheEnv+"=nofill")
	benchCacheFactory = fakeCacheFactory
	e = &benchEngine{entry: entry, fig: &engineBench{Engine: "starlark"}}
	c = &coldFigures{}
	a.measureColdWithCache(context.Background(), e, os.Args[0], 1, c)
	assert.Contains(t, c.WithCacheNA, "left the cache directory empty")
	assert.NotEmpty(t, e.fig.Errors)

	// Without a cache factory: n/a with the reason, and no error.
	asChild(t)
	benchCacheFactory = builtin.CacheFactory
	e = &benchEngine{entry: entry, fig: &engineBench{Engine: "starlark"}}
	c = &coldFigures{}
	a.measureColdWithCache(context.Background(), e, os.Args[0], 1, c)
	assert.Equal(t, "no cache option", c.WithCacheNA)
	assert.Empty(t, e.fig.Errors)
}

// reshapeFake is a fake javascript engine: it runs the directives of the
// fake fixture set below, and answers the reshape workload with value.
func reshapeFake(value json.RawMessage) spi.Factory {
	return func() (spi.Backend, error) {
		return fakebackend.New(fakebackend.Capabilities(), func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
			if strings.HasPrefix(string(req.Script), "(function") {
				return spi.OK(value), nil
			}
			if string(req.Script) == "sleep" {
				// A soft clock: the runaway notices its deadline a little late.
				select {
				case <-ctx.Done():
				case <-time.After(60 * time.Millisecond):
				}
				return spi.Limited(spi.LimitWallClock), nil
			}
			return directive(ctx, req)
		}), nil
	}
}

// fakeBenchApp returns an app with two fake javascript engines: "good"
// returns the expected reshape value, "bad" a different one.
func fakeBenchApp(t *testing.T) *app {
	t.Helper()
	set, err := fixtures.New("javascript", ".fake", fstest.MapFS{
		"echo.fake":           {Data: []byte("echo")},
		"runaway_loop.fake":   {Data: []byte("sleep")},
		"runaway_native.fake": {Data: []byte("limit memory")},
	})
	require.NoError(t, err)
	return &app{
		newRegistry: func() (*registry.Registry, error) {
			r := new(registry.Registry)
			r.Register(registry.Entry{Engine: "good", Language: "javascript", Capabilities: fakebackend.Capabilities(),
				Factory: reshapeFake(workloads.ReshapeExpected())})
			r.Register(registry.Entry{Engine: "bad", Language: "javascript", Capabilities: fakebackend.Capabilities(),
				Factory: reshapeFake(json.RawMessage(`{"n":1}`))})
			return r, nil
		},
		fixtures: func(string) (*fixtures.Set, bool) { return &set, true },
	}
}

func TestBenchReshapeMismatchIsLoud(t *testing.T) {
	a := fakeBenchApp(t)
	args := []string{"bench", "--runs", "2", "--cold-runs", "0", "--throughput-time", "10ms"}

	res := cli(a, "", append(args, "--engine", "good")...)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.NotContains(t, res.stdout, "MISMATCH")

	res = cli(a, "", append(args, "--engine", "good", "--engine", "bad")...)
	assert.Equal(t, exitUntyped, res.code)
	assert.Contains(t, res.stderr, "bad: reshape: MISMATCH")
	assert.NotContains(t, res.stderr, "good:")

	res = cli(a, "", append(args, "--json")...)
	assert.Equal(t, exitUntyped, res.code)
	r := decodeBench(t, res.stdout)
	require.Len(t, r.Engines, 2)
	byName := map[string]*engineBench{}
	for _, e := range r.Engines {
		byName[e.Engine] = e
		assertFigures(t, e)
	}
	assert.True(t, byName["good"].Reshape.MatchesJS)
	assert.False(t, byName["bad"].Reshape.MatchesJS)
	assert.Equal(t, map[string]int{"limitExceeded/wallClock": 2}, byName["good"].Kill.EndedBy)
	assert.Equal(t, map[string]int{"limitExceeded/memory": 2}, byName["good"].KillNative.EndedBy)
	assert.Equal(t, "--cold-runs 0", byName["good"].Cold.WithoutCacheNA)
}

func TestBenchTable(t *testing.T) {
	a := fakeBenchApp(t)
	res := cli(a, "", "bench", "--engine", "good", "--runs", "1", "--cold-runs", "0", "--throughput-time", "10ms")
	require.Equal(t, exitOK, res.code, res.stderr)
	lines := strings.Split(res.stdout, "\n")
	require.Greater(t, len(lines), 4, res.stdout)
	for _, col := range []string{"ENGINE", "ECHO p50 µs", "ECHO p99 µs", "RESHAPE p50 ms", "KILL p50 ms", "KILL max ms",
		"NATIVE KILL p50 ms", "COLD ms", "COLD+CACHE ms", "RESHAPE/s 1w", "RESHAPE/s Nw", "SCALING"} {
		assert.Contains(t, res.stdout, col)
	}
	at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "ENGINE") })
	require.GreaterOrEqual(t, at, 0, res.stdout)
	assert.Equal(t, "good", strings.Fields(lines[at+1])[0])
	// Not a terminal: the table and its notes fit 80 columns, the
	// columns that do not fit side by side in further tables.
	for _, l := range lines {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), plainWidth, "%q", l)
	}
	assert.Contains(t, res.stdout, "good runaway_loop (deadline 50 ms, hard clock): overshoot p50")
	assert.Contains(t, res.stdout, "good cold: n/a (--cold-runs 0)")
}

func TestBenchUsage(t *testing.T) {
	a := fakeBenchApp(t)
	for _, args := range [][]string{
		{"bench", "--runs", "0"},
		{"bench", "--cold-runs", "-1"},
		{"bench", "--throughput-time", "0s"},
		{"bench", "--engine", "nosuch"},
		{"bench", "extra"},
		{"bench-cold"},
		{"bench-cold", "--engine", "nosuch"},
		{"bench-cold", "--engine", "good", "--cache-dir", t.TempDir()},
	} {
		res := cli(a, "", args...)
		assert.Equal(t, exitUsage, res.code, "%v: %s", args, res.stderr)
		assert.Empty(t, res.stdout, "%v", args)
		assertOneLine(t, res.stderr)
	}
}

func TestBenchHelp(t *testing.T) {
	a := fakeBenchApp(t)
	res := cli(a, "", "bench", "--help")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "sandbank bench --json")
	res = cli(a, "", "--help")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "bench ")
	assert.NotContains(t, res.stdout, "bench-cold", "the child mode is hidden")
}

func TestBenchColdChildMode(t *testing.T) {
	a := fakeBenchApp(t)
	res := cli(a, "", "bench-cold", "--engine", "good")
	require.Equal(t, exitOK, res.code, res.stderr)
	var c coldResult
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &c))
	assert.True(t, c.OK)
	assert.JSONEq(t, string(echoInput), string(c.Value))
}

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{ms(5), 0.5, 5 * time.Millisecond},
		{ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{ms(4, 3, 2, 1), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.9, 9 * time.Millisecond},
	} {
		in := append([]time.Duration(nil), tc.in...)
		assert.Equal(t, tc.want, percentile(tc.in, tc.p), "%v p%v", tc.in, tc.p)
		assert.Equal(t, in, tc.in, "percentile does not reorder its input")
	}
}

func TestSameJSON(t *testing.T) {
	assert.True(t, sameJSON([]byte(`{"a":1,"b":[2.0]}`), []byte(`{"b":[2],"a":1.0}`)))
	assert.False(t, sameJSON([]byte(`{"a":1}`), []byte(`{"a":2}`)))
	assert.False(t, sameJSON([]byte(`{`), []byte(`{`)))
}

// countdown reports n leftovers, one fewer at each look.
type countdown struct{ n int }

func (c *countdown) Leftovers() int {
	if c.n > 0 {
		c.n--
		return c.n + 1
	}
	return 0
}

// TestBenchWaitsForLeftovers: after a kill, bench waits until the engine
// reports no stopped run still going on, and records nothing wrong; an
// engine that reports none is not waited for.
func TestBenchWaitsForLeftovers(t *testing.T) {
	c := &countdown{n: 3}
	e := &benchEngine{fig: &engineBench{}, leftovers: c}
	e.waitLeftovers(context.Background())
	assert.Zero(t, c.n, "bench looked until no leftover was left")
	assert.Empty(t, e.fig.Errors)
	assert.Zero(t, (&benchEngine{fig: &engineBench{}}).waitLeftovers(context.Background()))
}
