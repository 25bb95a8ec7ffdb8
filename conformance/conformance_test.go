package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/conformance/verdict"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/fixtures/javascript"
	"github.com/sandbank/sandbank/spi"
)

// check runs the kit and requires that it was not refused.
func check(t *testing.T, cfg *fakeConfig, opts *Options) *Report {
	t.Helper()
	rep, err := Check(context.Background(), cfg.factory(), opts)
	require.NoError(t, err)
	require.NotNil(t, rep)
	return rep
}

func result(t *testing.T, rep *Report, name string) CaseResult {
	t.Helper()
	for _, c := range rep.Cases {
		if c.Name == name {
			return c
		}
	}
	require.Failf(t, "case not in report", "%s", name)
	return CaseResult{}
}

// withoutSkips is set without the files that declare cases inapplicable,
// so that the fake, which answers every case, is asked every one.
func withoutSkips(set fixtures.Set) fixtures.Set {
	files := fstest.MapFS{}
	_ = fs.WalkDir(set.FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(name, ".skip") {
			return err
		}
		b, err := fs.ReadFile(set.FS, name)
		files[name] = &fstest.MapFile{Data: b}
		return err
	})
	set.FS = files
	return set
}

func TestGoodFakePassesEveryCase(t *testing.T) {
	cfg := newFakeConfig()
	set := withoutSkips(cfg.set)
	cfg.set = set
	var progress []string
	rep := check(t, cfg, &Options{Fixtures: &set, CPUBudget: smallBudget(), Progress: func(name string, i, n int) {
		assert.Equal(t, len(CaseNames()), n)
		assert.Equal(t, len(progress)+1, i)
		progress = append(progress, name)
	}})
	assert.Equal(t, CaseNames(), progress)
	require.Len(t, rep.Cases, len(CaseNames()))
	for i, c := range rep.Cases {
		assert.Equal(t, CaseNames()[i], c.Name)
		assert.Equal(t, StatusPass, c.Status, "%s: %s", c.Name, c.Reason)
		assert.Positive(t, c.Duration, c.Name)
	}
	assert.False(t, rep.Failed())
	assert.Equal(t, "javascript", rep.Language)
	assert.Equal(t, goodCaps(), rep.Capabilities)

	// One probe instance, then at least one instance per case but
	// cpu_budget (which runs on the small-budget factory); every one of
	// them closed.
	assert.GreaterOrEqual(t, cfg.made.Load(), int64(len(CaseNames())))
	assert.Equal(t, cfg.made.Load(), cfg.closed.Load())
	assert.Contains(t, result(t, rep, "no_network").Reason, "tried: fetch")
	assert.Contains(t, result(t, rep, "allocation_bomb").Reason, "grew by")
}

// TestSuiteRunsCasesOneByOne: Prepare runs no case; each Suite.Run runs
// one and grows the report, which then holds what Check's would; a case
// outside the suite, or run twice, is a failed result, not a second run.
func TestSuiteRunsCasesOneByOne(t *testing.T) {
	cfg := newFakeConfig()
	cfg.caps.Memory = false // so that the suite also shows skips
	var progress []string
	s, err := Prepare(cfg.factory(), &Options{Cases: []string{"echo", "allocation_bomb"}, Progress: func(name string, i, n int) {
		progress = append(progress, fmt.Sprintf("%s %d/%d", name, i, n))
	}})
	require.NoError(t, err)
	assert.Equal(t, []string{"echo", "allocation_bomb"}, s.Cases())
	assert.Empty(t, s.Report().Cases)
	made := cfg.made.Load()

	assert.Equal(t, StatusSkip, s.Run(context.Background(), "allocation_bomb").Status)
	assert.Equal(t, StatusPass, s.Run(context.Background(), "echo").Status)
	madeByEcho := cfg.made.Load() - made
	assert.Positive(t, madeByEcho)
	assert.Equal(t, []string{"allocation_bomb 2/2", "echo 1/2"}, progress)

	again := s.Run(context.Background(), "echo")
	assert.Equal(t, StatusFail, again.Status)
	assert.Contains(t, again.Reason, "already run")
	unknown := s.Run(context.Background(), "throw")
	assert.Equal(t, StatusFail, unknown.Status)
	assert.Contains(t, unknown.Reason, "not in the suite")
	assert.Equal(t, madeByEcho, cfg.made.Load()-made, "neither ran a case")

	rep := s.Report()
	require.Len(t, rep.Cases, 4)
	assert.Equal(t, "allocation_bomb", rep.Cases[0].Name)
	assert.NotEmpty(t, rep.Proofs)
	assert.Equal(t, cfg.made.Load(), cfg.closed.Load())
}

func TestReportJSON(t *testing.T) {
	cfg := newFakeConfig()
	cfg.caps.CPU = false
	rep := check(t, cfg, &Options{Cases: []string{"echo", "cpu_budget"}})
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "javascript", back["language"])
	caps := back["capabilities"].(map[string]any)
	assert.Equal(t, "none", caps["network"])
	assert.Equal(t, "hard", caps["wallClock"])
	cases := back["cases"].([]any)
	require.Len(t, cases, 2)
	echo := cases[0].(map[string]any)
	assert.Equal(t, "echo", echo["name"])
	assert.Equal(t, "pass", echo["status"])
	assert.NotContains(t, echo, "reason")
	assert.Positive(t, echo["durationNs"])
	cpu := cases[1].(map[string]any)
	assert.Equal(t, "skip", cpu["status"])
	assert.Contains(t, cpu["reason"], "gated by CPU")
	ev := echo["evidence"].([]any)[0].(map[string]any)
	assert.Equal(t, "distinctRuns", ev["name"])
	assert.InDelta(t, echoSequential+2*echoConcurrent, ev["value"], 0)
	proofs := back["proofs"].([]any)
	require.Len(t, proofs, 6, "network=none, wallClock=hard, memory, freshPerRun, hostCalls, deterministic (CPU is not declared)")
	assert.Equal(t, false, proofs[0].(map[string]any)["proven"], "its cases did not run")
}

// TestProofs: every declared capability has a proof entry naming the
// figures that proved it; a case that failed or did not run leaves it
// unproven.
func TestProofs(t *testing.T) {
	cfg := newFakeConfig()
	rep := check(t, cfg, &Options{CPUBudget: smallBudget(), Cases: []string{"runaway_loop", "cpu_budget", "no_escape"}})
	byCap := map[string]Proof{}
	for _, p := range rep.Proofs {
		byCap[p.Capability] = p
	}
	assert.Equal(t, []string{"network=none", "wallClock=hard", "memory", "cpu", "freshPerRun", "hostCalls", "deterministic"}, verdict.CapabilityKeys(cfg.caps))
	require.Len(t, byCap, 7)
	assert.False(t, byCap["wallClock=hard"].Proven, "runaway_native and abort_mid_run did not run: %v", byCap["wallClock=hard"].By)
	assert.Contains(t, byCap["wallClock=hard"].By, "runaway_native: not run")
	assert.Contains(t, strings.Join(byCap["wallClock=hard"].By, "|"), "runaway_loop: stopAfter=")
	assert.Contains(t, strings.Join(byCap["cpu"].By, "|"), "cpu_budget: stopAfter=")
	assert.True(t, byCap["cpu"].Proven, byCap["cpu"].By)
	assert.False(t, byCap["memory"].Proven)

	full := check(t, newFakeConfig(), &Options{CPUBudget: smallBudget()})
	for _, p := range full.Proofs {
		assert.True(t, p.Proven, "%s: %v", p.Capability, p.By)
		assert.NotEmpty(t, p.By, p.Capability)
	}
}

// TestGates: the weakest honest declaration skips every gated case with
// the capability named, and the others still pass (so the kit handed the
// effect the opt-ins the declaration needs).
func TestGates(t *testing.T) {
	cfg := newFakeConfig()
	cfg.caps = spi.Capabilities{Language: "javascript", Network: spi.NetworkOpen, WallClock: spi.WallClockSoft}
	rep := check(t, cfg, nil)
	want := map[string]string{
		"runaway_native":  "WallClock hard or Memory",
		"allocation_bomb": "Memory",
		"memory_limit":    "Memory",
		"no_network":      "Network none or allowlist",
		"no_escape":       "Network none or allowlist",
		"fresh_per_run":   "FreshPerRun",
		"cpu_budget":      "CPU",
		"input_too_big":   "Memory",
		"abort_mid_run":   "WallClock hard",
		"host_calls":      "HostCalls",
		"host_errors":     "HostCalls",
		"host_limits":     "HostCalls",
		"host_stop":       "HostCalls",
		"host_stuck":      "HostCalls",
		"host_concurrent": "HostCalls",
		"host_isolation":  "HostCalls",
		"host_clock":      "HostCalls",
		"host_exact":      "HostCalls",
		"logs":            "Logs",
		"logs_order":      "Logs",
		"deterministic":   "HostCalls",
		"files_in":        "Files",
		"files_out":       "Files",
		"files_bounds":    "Files",
	}
	for _, c := range rep.Cases {
		if gate, ok := want[c.Name]; ok {
			assert.Equal(t, StatusSkip, c.Status, c.Name)
			assert.Contains(t, c.Reason, "gated by "+gate, c.Name)
			continue
		}
		assert.Equal(t, StatusPass, c.Status, "%s: %s", c.Name, c.Reason)
	}
	assert.False(t, rep.Failed())
}

// TestOptInsExactlyWhenNeeded: the kit sets AllowNetwork and
// AllowReusedEnvironment from the declaration, whatever the base options
// say.
func TestOptInsExactlyWhenNeeded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		caps          func(*spi.Capabilities)
		base          effect.Options
		network, reus bool
	}{
		{"strong declaration, permissive base", func(*spi.Capabilities) {}, effect.Options{AllowNetwork: true, AllowReusedEnvironment: true}, false, false},
		{"open network", func(c *spi.Capabilities) { c.Network = spi.NetworkOpen }, effect.Options{}, true, false},
		{"allowlist", func(c *spi.Capabilities) { c.Network = spi.NetworkAllowlist }, effect.Options{}, true, false},
		{"reused environment", func(c *spi.Capabilities) { c.FreshPerRun = false }, effect.Options{}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []effect.Options
			orig := newEvaluator
			newEvaluator = func(s effect.ScriptReader, b spi.Backend, o *effect.Options) (evaluator, error) {
				seen = append(seen, *o)
				return orig(s, b, o)
			}
			t.Cleanup(func() { newEvaluator = orig })
			cfg := newFakeConfig()
			tc.caps(&cfg.caps)
			rep := check(t, cfg, &Options{Effect: tc.base, Cases: []string{"echo"}})
			assert.Equal(t, StatusPass, rep.Cases[0].Status, rep.Cases[0].Reason)
			require.Len(t, seen, 1)
			assert.Equal(t, tc.network, seen[0].AllowNetwork)
			assert.Equal(t, tc.reus, seen[0].AllowReusedEnvironment)
		})
	}
}

// TestBrokenBackends: each deliberately broken backend fails the kit, on
// the case that checks the rule it breaks, with a reason naming the rule.
func TestBrokenBackends(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, cfg *fakeConfig, opts *Options)
		cases  []string
		failed string // the case that must fail
		reason string // a substring of its reason
		// alsoPass are cases that must still pass: the fake breaks one
		// rule, and only the case that checks it fails.
		alsoPass []string
	}{
		{
			name: "echo alters the input",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = returns(`{"text":"echo ✓ é","n":8}`)
			},
			cases: []string{"echo"}, failed: "echo", reason: `echo: sequential run 1: the result must equal the run's own input: at $: key "empty" is missing`,
		},
		{
			name: "echo fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = outcome(spi.Threw("Error", "nope"))
			},
			cases: []string{"echo"}, failed: "echo", reason: "echo: sequential run 1: the result must be the input, got typed scriptError",
		},
		{
			name:  "throw returns a value",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) { c.override["throw"] = returns(`1`) },
			cases: []string{"throw"}, failed: "throw", reason: "throw: want a typed scriptError, got a value: 1",
		},
		{
			name: "throw loses the message",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["throw"] = outcome(spi.Threw("Error", "something else"))
			},
			cases: []string{"throw"}, failed: "throw", reason: "must contain the thrown text",
		},
		{
			name:  "syntax error reported as a value",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) { c.override["syntax_error"] = returns(`null`) },
			cases: []string{"syntax_error"}, failed: "syntax_error", reason: "does not compile must end in a typed scriptError",
		},
		{
			name: "runaway loop reported as memory",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["runaway_loop"] = outcome(spi.Limited(spi.LimitMemory))
			},
			cases: []string{"runaway_loop"}, failed: "runaway_loop", reason: "must end in a typed limitExceeded cpu or wallClock, got typed limitExceeded memory",
		},
		{
			name: "native operation runs to completion",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["runaway_native"] = returns(`300000000`)
			},
			cases: []string{"runaway_native"}, failed: "runaway_native", reason: "must end in a typed limit (wallClock or memory or cpu), got a value",
		},
		{
			name: "native operation stopped late",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["runaway_native"] = sleepThen(runawayWallClock+nativeGrace+200*time.Millisecond, spi.Limited(spi.LimitWallClock))
			},
			cases: []string{"runaway_native"}, failed: "runaway_native", reason: "past 250ms plus the stop grace 1s",
		},
		{
			name: "native operation: warm-up echo fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = outcome(spi.Infrastructure("cold"))
			},
			cases: []string{"runaway_native"}, failed: "runaway_native", reason: "the warm-up echo on this instance failed",
		},
		{
			name: "native operation: warm-up echo returns a wrong value",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = returns(`{}`)
			},
			cases: []string{"runaway_native"}, failed: "runaway_native", reason: "the warm-up echo on this instance returned a wrong value",
		},
		{
			name: "declares Memory but the bomb runs to completion",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["allocation_bomb"] = returns(`[]`)
			},
			cases: []string{"allocation_bomb"}, failed: "allocation_bomb", reason: "must end in a typed limitExceeded memory, got a value",
		},
		{
			name: "declares Memory but the host pays for the bomb",
			setup: func(t *testing.T, c *fakeConfig, o *Options) {
				o.Limits.MemoryBytes = 1 << 20 // bound: 4 MiB + 64 MiB
				c.override["allocation_bomb"] = hogMemory(256 << 20)
				t.Cleanup(freeMemory)
			},
			cases: []string{"allocation_bomb"}, failed: "allocation_bomb", reason: "past the bound 68.0 MiB",
		},
		{
			name: "deep recursion crashes untyped",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["deep_recursion"] = outcome(spi.Infrastructure("segfault"))
			},
			cases: []string{"deep_recursion"}, failed: "deep_recursion", reason: "must end in a typed scriptError or limitExceeded, got an untyped error",
		},
		{
			name: "deep recursion returns a value",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["deep_recursion"] = returns(`0`)
			},
			cases: []string{"deep_recursion"}, failed: "deep_recursion", reason: "got a value",
		},
		{
			name: "deep recursion leaves the instance broken",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["deep_recursion"] = crashAfter(spi.Threw("RangeError", "stack"))
			},
			cases: []string{"deep_recursion"}, failed: "deep_recursion", reason: "the next run on the same backend instance must succeed",
		},
		{
			name: "deep recursion then a wrong echo",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = returns(`{}`)
			},
			cases: []string{"deep_recursion"}, failed: "deep_recursion", reason: "the next run on the same backend instance returned a wrong value",
		},
		{
			name: "rich value loses 2^53-1 to float rounding",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["rich_value"] = func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
					return spi.OK(json.RawMessage(strings.Replace(string(req.Input), "9007199254740991", "9007199254740992", 1))), nil
				}
			},
			cases: []string{"rich_value"}, failed: "rich_value", reason: "at $.maxSafe: want the number 9007199254740991, got 9007199254740992",
		},
		{
			name: "rich value mangles astral characters",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["rich_value"] = func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
					return spi.OK(json.RawMessage(strings.ReplaceAll(string(req.Input), "😀", "??"))), nil
				}
			},
			cases: []string{"rich_value"}, failed: "rich_value", reason: "at $.astral: want the string",
		},
		{
			name: "rich value fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["rich_value"] = outcome(spi.Limited(spi.LimitMemory))
			},
			cases: []string{"rich_value"}, failed: "rich_value", reason: "the rich value must come back, got typed limitExceeded memory",
		},
		{
			name:  "declares Network none but reaches the canary",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) { c.override["no_network"] = reachCanary },
			cases: []string{"no_network"}, failed: "no_network", reason: "the loopback canary saw 1 request(s)",
		},
		{
			name: "network probe reports a way through",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_network"] = returns(`{"tried":["fetch","XMLHttpRequest"],"reached":["XMLHttpRequest"]}`)
			},
			cases: []string{"no_network"}, failed: "no_network", reason: "reached the canary through XMLHttpRequest",
		},
		{
			name: "network probe report malformed",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_network"] = returns(`{"tried":[]}`)
			},
			cases: []string{"no_network"}, failed: "no_network", reason: `must return {"tried": [...], "reached": [...]}`,
		},
		{
			name: "network probe fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_network"] = outcome(spi.Threw("Error", "probe broke"))
			},
			cases: []string{"no_network"}, failed: "no_network", reason: "must finish with its report, or abort with a typed error naming the refused address, got typed scriptError",
		},
		{
			name: "network probe aborts without naming the refused address",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_network"] = refuseNetwork("HTTP request refused")
			},
			cases: []string{"no_network"}, failed: "no_network", reason: "abort with a typed error naming the refused address",
		},
		{
			name: "escape probe finds process",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_escape"] = returns(`{"found":["process","file:/etc/passwd"],"clock":null}`)
			},
			cases: []string{"no_escape"}, failed: "no_escape", reason: "obtained host capabilities: process, file:/etc/passwd",
		},
		{
			name:  "escape probe sees the host clock",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) { c.override["no_escape"] = leakedClock },
			cases: []string{"no_escape"}, failed: "no_escape", reason: "not the documented fake clock 2000-01-01T00:00:00Z + at most 1000 ms",
		},
		{
			name: "escape probe clock not a number",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_escape"] = returns(`{"found":[],"clock":"now"}`)
			},
			cases: []string{"no_escape"}, failed: "no_escape", reason: `"clock" must be a number (the fake clock starts at 946684800000)`,
		},
		{
			name: "escape probe report malformed",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_escape"] = returns(`{"found":[]}`)
			},
			cases: []string{"no_escape"}, failed: "no_escape", reason: `must return {"found": [...], "clock": MS or null}`,
		},
		{
			name: "escape probe fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_escape"] = outcome(spi.Limited(spi.LimitCPU))
			},
			cases: []string{"no_escape"}, failed: "no_escape", reason: "must finish with its report, got typed limitExceeded cpu",
		},
		{
			name:  "declares FreshPerRun but keeps state between runs",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) { c.override["fresh_per_run"] = statefulRuns },
			cases: []string{"fresh_per_run"}, failed: "fresh_per_run", reason: `fresh_per_run: sequential run 2 of 16 saw state from an earlier run: {"runs":2}`,
		},
		{
			name:  "declares FreshPerRun but overlapping runs share state",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) { c.override["fresh_per_run"] = concurrentRuns },
			cases: []string{"fresh_per_run"}, failed: "fresh_per_run", reason: "concurrent run",
		},
		{
			name: "fresh probe answer malformed",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["fresh_per_run"] = returns(`{"count":1}`)
			},
			cases: []string{"fresh_per_run"}, failed: "fresh_per_run", reason: `must answer {"runs": COUNT}`,
		},
		{
			name: "fresh probe fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["fresh_per_run"] = outcome(spi.Threw("Error", "frozen"))
			},
			cases: []string{"fresh_per_run"}, failed: "fresh_per_run", reason: `sequential run 1 of 16 must answer {"runs":1}, got typed scriptError`,
		},
		{
			name: "declares CPU but the budget is a wall clock",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["cpu_budget"] = outcome(spi.Limited(spi.LimitWallClock))
			},
			cases: []string{"cpu_budget"}, failed: "cpu_budget", reason: "must end in a typed limitExceeded cpu, got typed limitExceeded wallClock",
		},
		{
			name: "CPU-budget factory declares another language",
			setup: func(_ *testing.T, _ *fakeConfig, o *Options) {
				other := newFakeConfig()
				other.caps.Language = "lua"
				o.CPUBudget = other.factory()
			},
			cases: []string{"cpu_budget"}, failed: "cpu_budget", reason: `CPU-budget factory's backend must declare language "javascript" and CPU`,
		},
		{
			name: "CPU-budget factory fails",
			setup: func(_ *testing.T, _ *fakeConfig, o *Options) {
				o.CPUBudget = func() (spi.Backend, error) { return nil, errors.New("no budget") }
			},
			cases: []string{"cpu_budget"}, failed: "cpu_budget", reason: "the CPU-budget factory failed: no budget",
		},
		{
			name: "declares Memory but parses any input",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["input_too_big"] = returns(`[]`)
			},
			cases: []string{"input_too_big"}, failed: "input_too_big", reason: "must end in a typed inputTooLarge, got a value",
		},
		{
			name: "declares WallClock hard but ignores cancellation",
			setup: func(t *testing.T, c *fakeConfig, o *Options) {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) })
				c.override["abort_mid_run"] = blockUntil(release, spi.Limited(spi.LimitWallClock))
				o.Watchdog = 3 * time.Second
			},
			cases: []string{"abort_mid_run"}, failed: "abort_mid_run", reason: "the backend's own Evaluate had not returned 1s (the stop grace) after the cancellation",
		},
		{
			name: "abort_mid_run ends before the cancellation",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["abort_mid_run"] = outcome(spi.Limited(spi.LimitWallClock))
			},
			cases: []string{"abort_mid_run"}, failed: "abort_mid_run", reason: "the run ended before it could be cancelled: typed limitExceeded wallClock",
		},
		{
			name: "the main factory's CPU budget ends abort_mid_run's loop",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.cpuBudget = 10 * time.Millisecond
			},
			cases: []string{"abort_mid_run"}, failed: "abort_mid_run", reason: "the run ended before it could be cancelled: typed limitExceeded cpu",
		},
		{
			name: "composition_throw returns a value",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["composition_throw"] = returns(`"fine"`)
			},
			cases: []string{"composition"}, failed: "composition", reason: "composition_throw must end in a typed scriptError, got a value",
		},
		{
			name: "composition_output stays small",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["composition_output"] = returns(`"x"`)
			},
			cases: []string{"composition"}, failed: "composition", reason: "must end in a typed limitExceeded output, got a value",
		},
		// Issue 16, class 1: a hard wall clock is timed.
		{
			name: "hard wall clock: the loop stops 3 s late",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["runaway_loop"] = sleepThen(3*time.Second, spi.Limited(spi.LimitWallClock))
			},
			cases: []string{"runaway_loop"}, failed: "runaway_loop", reason: "a loop under a hard wall clock: the backend's own Evaluate returned after 3",
		},
		{
			name: "hard wall clock: Evaluate returns 3 s after the cancellation",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["abort_mid_run"] = lateAfterCancel(3 * time.Second)
			},
			cases: []string{"abort_mid_run"}, failed: "abort_mid_run", reason: "had not returned 1s (the stop grace) after the cancellation",
		},
		{
			name: "hard wall clock: the native operation never returns",
			setup: func(t *testing.T, c *fakeConfig, o *Options) {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) })
				c.override["runaway_native"] = blockUntil(release, spi.Limited(spi.LimitWallClock))
				grace := 100 * time.Millisecond // the effect gives up on the backend early
				o.Effect.BackendGrace = &grace
				o.IdleWait = 3 * time.Second // the wait for the backend to return, past StopGrace
			},
			cases: []string{"runaway_native"}, failed: "runaway_native", reason: "the backend's own Evaluate had not returned 4s after the wall clock 250ms",
		},
		{
			name: "hard wall clock: the loop never returns",
			setup: func(t *testing.T, c *fakeConfig, o *Options) {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) })
				c.override["runaway_loop"] = blockUntil(release, spi.Limited(spi.LimitWallClock))
				grace := 100 * time.Millisecond // the effect gives up on the backend early
				o.Effect.BackendGrace = &grace
				o.IdleWait = 3 * time.Second // the wait for the backend to return, past StopGrace
			},
			cases: []string{"runaway_loop"}, failed: "runaway_loop", reason: "the backend's own Evaluate had not returned 4s after the wall clock 250ms (WallClock hard)",
		},
		// Class 2: CPU falls to idle after a limit or a cancellation.
		{
			name: "the loop's limit is reported while the engine keeps burning CPU",
			setup: func(_ *testing.T, c *fakeConfig, o *Options) {
				o.IdleWait = 3 * time.Second // it burns until closed: no need to wait the default
				c.override["runaway_loop"] = burnAfter(spi.Limited(spi.LimitWallClock))
			},
			cases: []string{"runaway_loop"}, failed: "runaway_loop", reason: "the engine kept running after its deadline",
		},
		{
			name: "the memory limit is reported while the engine keeps burning CPU",
			setup: func(_ *testing.T, c *fakeConfig, o *Options) {
				o.IdleWait = 3 * time.Second // it burns until closed: no need to wait the default
				c.override["allocation_bomb"] = burnAfter(spi.Limited(spi.LimitMemory))
			},
			cases: []string{"allocation_bomb"}, failed: "allocation_bomb", reason: "the engine kept running after Evaluate returned",
		},
		// Class 3: a CPU budget is timed, and a light script finishes.
		{
			name: "declares CPU but relabels its wall clock",
			setup: func(_ *testing.T, _ *fakeConfig, o *Options) {
				c := newFakeConfig()
				c.override["cpu_budget"] = func(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
					t := time.NewTimer(req.Limits.WallClock - 100*time.Millisecond)
					defer t.Stop()
					select {
					case <-t.C:
						return spi.Limited(spi.LimitCPU), nil
					case <-ctx.Done():
						return spi.Outcome{}, ctx.Err()
					}
				}
				o.CPUBudget = c.factory()
			},
			cases: []string{"cpu_budget"}, failed: "cpu_budget", reason: "a wall clock is not a CPU budget",
		},
		{
			name: "the CPU budget stops a script that needs less",
			setup: func(_ *testing.T, _ *fakeConfig, o *Options) {
				c := newFakeConfig()
				c.cpuBudget = 20 * time.Millisecond
				c.override["cpu_light"] = outcome(spi.Limited(spi.LimitCPU))
				o.CPUBudget = c.factory()
			},
			cases: []string{"cpu_budget"}, failed: "cpu_budget", reason: "a script that needs less than the small CPU budget must finish",
		},
		// Class 4: memory just over and under, and a small limit after a large one.
		{
			name: "caps memory at twice the limit",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["memory_probe"] = memoryProbe(2, false)
			},
			cases: []string{"memory_limit"}, failed: "memory_limit", reason: "over: holding 40.0 MiB (1.25 × the limit) under a memory limit of 32.0 MiB must end in a typed limitExceeded memory",
		},
		{
			name: "keeps the first request's memory limit",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["memory_probe"] = memoryProbe(1, true)
			},
			cases: []string{"memory_limit"}, failed: "memory_limit", reason: "over: holding 40.0 MiB",
		},
		{
			name: "caps memory far below the limit",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["memory_probe"] = memoryProbe(0.25, false)
			},
			cases: []string{"memory_limit"}, failed: "memory_limit", reason: "must succeed",
		},
		// Class 5: the input contract.
		{
			name: "the input's keys come back sorted",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = sortedEcho
			},
			cases: []string{"input_contract"}, failed: "input_contract", reason: "the backend's value must keep the input's key order",
		},
		{
			name: "a large input fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
					if len(req.Input) > 100_000 {
						return spi.Limited(spi.LimitMemory), nil
					}
					return spi.OK(req.Input), nil
				}
			},
			cases: []string{"input_contract"}, failed: "input_contract", reason: "must come back, got typed limitExceeded memory",
		},
		{
			name: "long strings are cut",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
					var m map[string]json.RawMessage
					if err := json.Unmarshal(req.Input, &m); err != nil {
						return spi.Outcome{}, err
					}
					m["long"] = json.RawMessage(`"abc"`)
					b, _ := json.Marshal(m)
					return spi.OK(b), nil
				}
			},
			cases: []string{"input_contract"}, failed: "input_contract", reason: "at $.long: want the string",
		},
		// Class 6: every run has its own nonce.
		{
			name: "answers every echo with the first answer",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = func() behavior {
					cache := cachedEcho()
					return func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) { return cache(ctx, f, req) }
				}()
			},
			cases: []string{"echo"}, failed: "echo", reason: "sequential run 2: the result must equal the run's own input: at $.nonce",
		},
		{
			name: "swaps answers between concurrent runs",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = swappedEcho()
			},
			cases: []string{"echo"}, failed: "echo", reason: "the result must equal the run's own input: at $.nonce",
		},
		{
			name: "concurrent fresh runs share one answer",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				var first atomic.Value
				c.override["fresh_per_run"] = func(_ context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
					first.CompareAndSwap(nil, nonceOf(f, req))
					return spi.OK(json.RawMessage(`{"runs":1,"nonce":"` + first.Load().(string) + `"}`)), nil
				}
			},
			cases: []string{"fresh_per_run"}, failed: "fresh_per_run", reason: "concurrent run",
		},
		// Class 7: host objects are enumerated.
		{
			name: "a host object among the globals",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["host_objects"] = func(_ context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
					return spi.OK(json.RawMessage(`{"names":["Math","sandbankHost","sandbankHost.readFile"],"nonce":"` + nonceOf(f, req) + `"}`)), nil
				}
			},
			cases: []string{"host_objects"}, failed: "host_objects", reason: "reaches 2 name(s) outside the language's standard set: sandbankHost (+1 under it)",
		},
		// Class 8: the fake clock is compared exactly.
		{
			name: "the clock reads host seconds",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_escape"] = func(context.Context, *fake, spi.Request) (spi.Outcome, error) {
					return spi.OK(json.RawMessage(fmt.Sprintf(`{"found":[],"clock":%d}`, time.Now().Unix()))), nil
				}
			},
			cases: []string{"no_escape"}, failed: "no_escape", reason: "not the documented fake clock",
		},
		{
			name: "the clock is the fake epoch plus the host's uptime",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["no_escape"] = returns(fmt.Sprintf(`{"found":[],"clock":%d}`, int64(946684800000)+3_600_000))
			},
			cases: []string{"no_escape"}, failed: "no_escape", reason: "not the documented fake clock",
		},
		// Class 9: allowlist, Warm and Close.
		{
			name: "declares Network allowlist but reaches the canary",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.caps.Network = spi.NetworkAllowlist
				c.override["no_network"] = reachCanary
			},
			cases: []string{"no_network"}, failed: "no_network", reason: "the loopback canary saw 1 request(s)",
		},
		{
			name: "runs share state after Warm",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.wrap = func(f *fake) spi.Backend {
					return warmer{fake: f, warm: func(context.Context, *fake) error { f.warmed.Store(true); return nil }}
				}
				c.override["fresh_per_run"] = func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
					if f.warmed.Load() {
						return spi.OK(json.RawMessage(fmt.Sprintf(`{"runs":%d,"nonce":"%s"}`, f.runs.Add(1), nonceOf(f, req)))), nil
					}
					return goodBehaviors["fresh_per_run"](ctx, f, req)
				}
			},
			cases: []string{"warm"}, failed: "warm", reason: "run 2 after Warm saw state from an earlier run",
		},
		{
			name: "Warm ignores its context",
			setup: func(t *testing.T, c *fakeConfig, _ *Options) {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) }) // the Warm left behind
				c.wrap = func(f *fake) spi.Backend {
					return warmer{fake: f, warm: func(context.Context, *fake) error { <-release; return nil }}
				}
			},
			cases: []string{"warm"}, failed: "warm", reason: "Warm must honour its context",
		},
		{
			name: "Close hangs",
			setup: func(t *testing.T, c *fakeConfig, o *Options) {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) })
				c.wrap = func(f *fake) spi.Backend { return hangingClose{fake: f, release: release} }
				o.CloseTimeout = 200 * time.Millisecond
			},
			cases: []string{"echo"}, failed: "echo", reason: "echo: Close did not return within 200ms (Options.CloseTimeout)",
		},
		{
			name: "Warm ignores a long context",
			setup: func(t *testing.T, c *fakeConfig, o *Options) {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) }) // the Warm left behind
				c.wrap = func(f *fake) spi.Backend {
					return warmer{fake: f, warm: func(ctx context.Context, _ *fake) error {
						if d, ok := ctx.Deadline(); ok && time.Until(d) < 100*time.Millisecond {
							<-ctx.Done()
							return ctx.Err()
						}
						<-release
						return nil
					}}
				}
				o.WarmTimeout = 200 * time.Millisecond
				o.StopGrace = 200 * time.Millisecond
			},
			cases: []string{"warm"}, failed: "warm", reason: "Warm had not returned within 200ms (Options.WarmTimeout)",
		},
		{
			name: "Warm fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.wrap = func(f *fake) spi.Backend {
					return warmer{fake: f, warm: func(context.Context, *fake) error { return errors.New("no pool") }}
				}
			},
			cases: []string{"warm"}, failed: "warm", reason: "failed: no pool",
		},
		{
			name: "the enumeration probe fails",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["host_objects"] = outcome(spi.Threw("TypeError", "no Reflect"))
			},
			cases: []string{"host_objects"}, failed: "host_objects", reason: "the enumeration probe must finish with its report, got typed scriptError",
		},
		{
			name: "the enumeration probe's report is malformed",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["host_objects"] = returns(`{"found":[]}`)
			},
			cases: []string{"host_objects"}, failed: "host_objects", reason: `must return {"names": [...], "nonce": NONCE}`,
		},
		{
			name: "the enumeration probe answers from a table",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["host_objects"] = returns(`{"names":["Math"],"nonce":"0000000000000000"}`)
			},
			cases: []string{"host_objects"}, failed: "host_objects", reason: "the enumeration probe must answer its nonce",
		},
		{
			name: "cpu_light answers from a table",
			setup: func(_ *testing.T, _ *fakeConfig, o *Options) {
				c := newFakeConfig()
				c.cpuBudget = 20 * time.Millisecond
				c.override["cpu_light"] = returns(`"__SANDBANK_NONCE"`)
				o.CPUBudget = c.factory()
			},
			cases: []string{"cpu_budget"}, failed: "cpu_budget", reason: "cpu_light must answer its nonce",
		},
		{
			name: "a clock where the set names none",
			setup: func(_ *testing.T, c *fakeConfig, o *Options) {
				set := c.set
				set.Clock = nil
				c.set = set
				o.Fixtures = &set
			},
			cases: []string{"no_escape"}, failed: "no_escape", reason: `"clock" must be null: the javascript fixture set names no fake clock`,
		},
		// Class 10: a backend that recognises fixtures instead of running them.
		{
			name: "answers fresh_per_run from a table of expected values",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["fresh_per_run"] = returns(`{"runs":1}`)
			},
			cases: []string{"fresh_per_run"}, failed: "fresh_per_run", reason: "must answer its script's nonce",
		},
		{
			name: "answers the memory probe from a table of expected values",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["memory_probe"] = func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
					var n int64
					_ = json.Unmarshal(req.Input, &n)
					if n > req.Limits.MemoryBytes {
						return spi.Limited(spi.LimitMemory), nil
					}
					return spi.OK(json.RawMessage(`"__SANDBANK_NONCE"`)), nil
				}
			},
			cases: []string{"memory_limit"}, failed: "memory_limit", reason: "the probe must answer its nonce",
		},
		{
			name: "recognises the published fixtures by their hash",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.set.Salt = nil // this fake knows only the unsalted templates
			},
			cases: []string{"echo"}, failed: "echo", reason: "got typed scriptError",
		},
		// Issue 40, class 1: a broker shared between runs.
		{
			name: "host calls: one broker shared by the instance's runs",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["host_calls"] = sharedBroker()
			},
			cases: []string{"host_isolation", "host_calls"}, failed: "host_isolation", reason: fmt.Sprintf("of %d at once: ", hostIsoRuns), alsoPass: []string{"host_calls"},
		},
		// Class 2: the wall clock stands still during host calls.
		{
			name: "host calls: the clock pauses while a host call is out",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["host_clock"] = hostClockBehavior(true)
			},
			cases: []string{"host_clock"}, failed: "host_clock", reason: "past the wall clock plus 250ms (a quarter of the stop grace): the wall clock runs while a host call is out",
		},
		// Class 3: Evaluate waits for a host function that never returns.
		{
			name: "host calls: Evaluate waits for every answer after its stop",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["host_calls"] = awaitsEveryAnswer
			},
			cases: []string{"host_stuck", "host_calls"}, failed: "host_stuck", reason: "while stuck in a host call, the backend's own Evaluate returned", alsoPass: []string{"host_calls"},
		},
		// Class 4: integers past 2^53 in host answers.
		{
			name: "host calls: answers pass through float64",
			setup: func(_ *testing.T, c *fakeConfig, o *Options) {
				c.override["host_calls"] = roundedHost
				set := withoutSkips(c.set)
				c.set, o.Fixtures = set, &set
			},
			cases: []string{"host_exact", "host_calls"}, failed: "host_exact", reason: "host_exact: the second call's argument must be the first answer exactly", alsoPass: []string{"host_calls"},
		},
		// Class 5: error names.
		{
			name: "every rejection named Error",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["throw_named"] = throwNamed(true)
			},
			cases: []string{"throw_named"}, failed: "throw_named", reason: `a rejected ReferenceError must arrive named "ReferenceError"`,
		},
		// Class 6: logs.
		{
			name: "logs: the level taken from the stream",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["logs_order"] = logsOrderBehavior(orderLevelStream)
			},
			cases: []string{"logs_order"}, failed: "logs_order", reason: "a line's level is its call's, not its stream's",
		},
		{
			name: "logs: a ring keeps the last thousand lines",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["logs_order"] = logsOrderBehavior(orderRing)
			},
			cases: []string{"logs_order"}, failed: "logs_order", reason: `line 1 of 1000 must be "order 0 LEVEL"`,
		},
		{
			name: "logs: stdout's lines, then stderr's",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["logs_order"] = logsOrderBehavior(orderStreamsApart)
			},
			cases: []string{"logs_order"}, failed: "logs_order", reason: `line 2 of 1500 must be "order 1 LEVEL"`,
		},
		// Class 7: large inputs at once.
		{
			name: "inputs over 64 KiB share one slot",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["echo"] = sharedLargeSlot()
			},
			cases: []string{"echo", "input_contract"}, failed: "echo", reason: "the result must equal the run's own input: at $.", alsoPass: []string{"input_contract"},
		},
		// Class 8: a declared host object that is not there.
		{
			name: "declares a host object it never installs",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.wrap = func(f *fake) spi.Backend { return declaringFake{fake: f, names: []string{"sandbankTimer.*"}} }
			},
			cases: []string{"host_objects"}, failed: "host_objects", reason: "1 declared host object(s) are not there for the script to reach: sandbankTimer.*",
		},
		// Class 9: a hard clock's idle check counts from the deadline.
		{
			name: "hard wall clock: returns at the deadline, the native operation runs on for 3 s",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["runaway_native"] = zombieFor(3*time.Second, spi.Limited(spi.LimitWallClock))
			},
			cases: []string{"runaway_native"}, failed: "runaway_native", reason: "the engine kept running after its deadline",
		},
		{
			name: "hard wall clock: returns at the deadline, the loop runs on for 3 s",
			setup: func(_ *testing.T, c *fakeConfig, _ *Options) {
				c.override["runaway_loop"] = zombieFor(3*time.Second, spi.Limited(spi.LimitWallClock))
			},
			cases: []string{"runaway_loop"}, failed: "runaway_loop", reason: "the engine kept running after its deadline",
		},
		{
			name: "backend hangs: the watchdog fires",
			setup: func(t *testing.T, c *fakeConfig, o *Options) {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) })
				c.override["echo"] = blockUntil(release, spi.OK(json.RawMessage(`{}`)))
				o.Watchdog = 300 * time.Millisecond
			},
			cases: []string{"echo"}, failed: "echo", reason: "echo: watchdog: case did not finish within 300ms",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newFakeConfig()
			opts := &Options{Cases: tc.cases}
			tc.setup(t, cfg, opts)
			rep := check(t, cfg, opts)
			assert.True(t, rep.Failed())
			got := result(t, rep, tc.failed)
			assert.Equal(t, StatusFail, got.Status, got.Reason)
			assert.Contains(t, got.Reason, tc.reason)
			assert.True(t, strings.HasPrefix(got.Reason, tc.failed+": "), "the reason names the case: %s", got.Reason)
			for _, name := range tc.alsoPass {
				r := result(t, rep, name)
				assert.Equal(t, StatusPass, r.Status, "%s: %s", name, r.Reason)
			}
		})
	}
}

// TestCloseThatNeverReturns: a backend whose Close never returns does not
// hang the kit. Check returns (waited for on a channel, with a generous
// bound that only a hang reaches), and the report fails the backend with
// the reason: in the case whose backend did not close, and in the probe
// the declaration was read from, also when every selected case is
// skipped.
func TestCloseThatNeverReturns(t *testing.T) {
	const hangBound = 2 * time.Minute
	for _, tc := range []struct {
		name   string
		caps   func(c *spi.Capabilities)
		cases  []string
		failed []string
	}{
		{name: "in a case", caps: func(*spi.Capabilities) {}, cases: []string{"echo"}, failed: []string{"probe", "echo"}},
		{name: "in the probe alone", caps: func(c *spi.Capabilities) { c.HostCalls = false }, cases: []string{"host_calls"}, failed: []string{"probe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) }) // the Close goroutines left behind
			cfg := newFakeConfig()
			tc.caps(&cfg.caps)
			cfg.wrap = func(f *fake) spi.Backend { return hangingClose{fake: f, release: release} }
			got := make(chan *Report, 1)
			go func() {
				rep, err := Check(context.Background(), cfg.factory(), &Options{Cases: tc.cases, CloseTimeout: 200 * time.Millisecond})
				assert.NoError(t, err)
				got <- rep
			}()
			var rep *Report
			select {
			case rep = <-got:
			case <-time.After(hangBound):
				t.Fatalf("Check did not return within %v: a Close that never returns hung the kit", hangBound)
			}
			require.NotNil(t, rep)
			assert.True(t, rep.Failed())
			for _, name := range tc.failed {
				res := result(t, rep, name)
				assert.Equal(t, StatusFail, res.Status, res.Reason)
				assert.Equal(t, name+": Close did not return within 200ms (Options.CloseTimeout)", res.Reason)
			}
		})
	}
}

// TestBrokenEffect: the cases that check the effect around the backend
// (abort, abort_mid_run, composition, input_too_big's origin) fail when the
// effect breaks its rules.
func TestBrokenEffect(t *testing.T) {
	type run = func(context.Context) ([]byte, error)
	// hung is where a run that never returns waits: until the test ends.
	hung := make(chan struct{})
	t.Cleanup(func() { close(hung) })
	for _, tc := range []struct {
		name   string
		wrap   func(ctx context.Context, stem string, run run) ([]byte, error)
		setup  func(*fakeConfig)
		failed string
		reason string
	}{
		{
			name: "a cancelled run yields a value and the cancellation",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort" {
					return []byte(`{}`), context.Canceled
				}
				return run(ctx)
			},
			failed: "abort", reason: "must yield context.Canceled and no value",
		},
		{
			name: "a run cancelled mid-way yields a value and the cancellation",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort_mid_run" {
					_, err := run(ctx)
					return []byte(`{}`), err
				}
				return run(ctx)
			},
			failed: "abort_mid_run", reason: "must yield context.Canceled, got",
		},
		{
			name: "a run ends without calling the backend",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort_mid_run" {
					return nil, &effect.Failure{Code: effect.CodeLimitExceeded, Kind: effect.LimitCPU}
				}
				return run(ctx)
			},
			failed: "abort_mid_run", reason: "abort_mid_run: the run ended before it could be cancelled: typed limitExceeded cpu",
		},
		{
			name: "a run never calls the backend",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort_mid_run" {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return run(ctx)
			},
			failed: "abort_mid_run", reason: "abort_mid_run: the backend was never called",
		},
		{
			name: "the backend returns at once but the effect never does",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort_mid_run" {
					_, _ = run(ctx)
					<-hung
				}
				return run(ctx)
			},
			setup: func(c *fakeConfig) {
				c.override["abort_mid_run"] = outcome(spi.Limited(spi.LimitWallClock))
			},
			failed: "abort_mid_run", reason: "the run ended before it could be cancelled, and the effect did not return",
		},
		{
			name: "a cancelled run yields a value",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort" {
					return []byte(`{}`), nil
				}
				return run(ctx)
			},
			failed: "abort", reason: "must yield context.Canceled and no value, got a value",
		},
		{
			name: "a cancelled run yields a typed failure that wraps the cancellation",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort" {
					return nil, errors.Join(context.Canceled, &effect.Failure{Code: effect.CodeLimitExceeded, Kind: effect.LimitWallClock})
				}
				return run(ctx)
			},
			failed: "abort", reason: "not a typed failure",
		},
		{
			name: "a run cancelled mid-way yields a typed failure",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort_mid_run" {
					_, _ = run(ctx)
					return nil, &effect.Failure{Code: effect.CodeLimitExceeded, Kind: effect.LimitWallClock}
				}
				return run(ctx)
			},
			failed: "abort_mid_run", reason: "must yield context.Canceled, got typed limitExceeded wallClock",
		},
		{
			name: "a run cancelled mid-way never returns",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "abort_mid_run" {
					go func() { _, _ = run(ctx) }()
					<-hung
					return nil, ctx.Err()
				}
				return run(ctx)
			},
			failed: "abort_mid_run", reason: "the effect did not return after the cancellation",
		},
		{
			name: "a thrown message arrives unbounded",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "composition_throw" {
					return nil, &effect.Failure{Code: effect.CodeScriptError, Name: "Error", Message: strings.Repeat("y", 100000)}
				}
				return run(ctx)
			},
			failed: "composition", reason: "the scriptError message is 100000 UTF-16 units, past the bound 2048",
		},
		{
			name: "a thrown message arrives with a lone surrogate",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "composition_throw" {
					return nil, &effect.Failure{Code: effect.CodeScriptError, Name: "Error", Message: "y\xed\xa0\x80z"}
				}
				return run(ctx)
			},
			failed: "composition", reason: "the scriptError message is not storable",
		},
		{
			name: "a thrown name arrives unbounded",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "composition_throw" {
					return nil, &effect.Failure{Code: effect.CodeScriptError, Name: strings.Repeat("E", 5000), Message: "m"}
				}
				return run(ctx)
			},
			failed: "composition", reason: "the scriptError name is 5000 UTF-16 units",
		},
		{
			name: "a thrown message arrives empty",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "composition_throw" {
					return nil, &effect.Failure{Code: effect.CodeScriptError, Name: "Error"}
				}
				return run(ctx)
			},
			failed: "composition", reason: "the scriptError message is empty",
		},
		{
			name: "the input is refused at the byte ceiling, not by the backend",
			wrap: func(ctx context.Context, stem string, run run) ([]byte, error) {
				if stem == "input_too_big" {
					return nil, &effect.Failure{Code: effect.CodeInputTooLarge, Bytes: inputTooBigBytes, Limit: 1 << 20}
				}
				return run(ctx)
			},
			failed: "input_too_big", reason: "must come from the backend at the memory limit 16777216, got one with limit 1048576",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withBrokenEffect(t, tc.wrap)
			cfg := newFakeConfig()
			if tc.setup != nil {
				tc.setup(cfg)
			}
			// A short watchdog only where the case must wait it out.
			watchdog := 10 * time.Second
			if tc.failed == "abort_mid_run" {
				watchdog = time.Second
			}
			rep := check(t, cfg, &Options{Cases: []string{tc.failed}, Watchdog: watchdog})
			got := result(t, rep, tc.failed)
			assert.Equal(t, StatusFail, got.Status, got.Reason)
			assert.Contains(t, got.Reason, tc.reason)
		})
	}
}

// TestKitSetsCaseOptions: the kit overrides the base options a case
// depends on, so a narrow base cannot make a case pass vacuously or fail
// for the wrong reason.
func TestKitSetsCaseOptions(t *testing.T) {
	cfg := newFakeConfig()
	rep := check(t, cfg, &Options{
		Cases:  []string{"input_too_big", "composition"},
		Effect: effect.Options{MaxInputBytes: 1 << 20, MaxOutputBytes: 64 << 20},
	})
	for _, c := range rep.Cases {
		assert.Equal(t, StatusPass, c.Status, "%s: %s", c.Name, c.Reason)
	}
}

// TestCPUBudgetFactory: cpu_budget runs on Options.CPUBudget when given.
func TestCPUBudgetFactory(t *testing.T) {
	main := newFakeConfig() // its budget never ends the loop in time
	small := newFakeConfig()
	small.cpuBudget = 20 * time.Millisecond
	rep := check(t, main, &Options{Cases: []string{"cpu_budget"}, CPUBudget: small.factory(), Watchdog: 2 * time.Second})
	assert.Equal(t, StatusPass, rep.Cases[0].Status, rep.Cases[0].Reason)
	assert.Equal(t, int64(1), small.made.Load())
	assert.Equal(t, small.made.Load(), small.closed.Load())
}

func TestRefusals(t *testing.T) {
	python := newFakeConfig()
	python.caps.Language = "python"

	jsSet := newFakeConfig().set
	toy, err := fixtures.New("toy", ".toy", fstest.MapFS{"echo.toy": {Data: []byte("echo")}})
	require.NoError(t, err)

	for _, tc := range []struct {
		name    string
		factory spi.Factory
		opts    *Options
		want    string
	}{
		{"nil factory", nil, nil, "conformance: nil factory"},
		{"no fixtures for the language", python.factory(), nil, `conformance: no fixtures for language "python"; pass Options.Fixtures`},
		{"fixtures for another language", python.factory(), &Options{Fixtures: &jsSet}, `conformance: the fixture set is for language "javascript" but the backend declares "python"`},
		{"fixtures for another language (toy)", newFakeConfig().factory(), &Options{Fixtures: &toy}, `the fixture set is for language "toy"`},
		{"empty fixture set", newFakeConfig().factory(), &Options{Fixtures: &fixtures.Set{Language: "javascript", Ext: ".js"}}, "Options.Fixtures has no file system"},
		{"factory fails", func() (spi.Backend, error) { return nil, errors.New("boom") }, nil, "conformance: factory failed: boom"},
		{"factory returns nil", func() (spi.Backend, error) { return nil, nil }, nil, "conformance: factory returned a nil backend"},
		{"factory panics", func() (spi.Backend, error) { panic("bad") }, nil, "conformance: factory panicked: bad"},
		{"invalid declaration", func() spi.Factory {
			c := newFakeConfig()
			c.caps.Network = 0
			return c.factory()
		}(), nil, "conformance: the backend declares invalid capabilities"},
		{"unknown case", newFakeConfig().factory(), &Options{Cases: []string{"echo", "telepathy"}}, `conformance: unknown case "telepathy"`},
		{"negative watchdog", newFakeConfig().factory(), &Options{Watchdog: -1}, "conformance: negative limit, watchdog or bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Check(context.Background(), tc.factory, tc.opts)
			require.Error(t, err)
			assert.Nil(t, rep)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestMissingScriptFailsTheCase: a set without a case's script fails that
// case, naming the file; the others run.
func TestMissingScriptFailsTheCase(t *testing.T) {
	set, err := fixtures.New("toy", ".toy", fstest.MapFS{"echo.toy": {Data: []byte("toy echo")}})
	require.NoError(t, err)
	cfg := newFakeConfig()
	cfg.caps.Language = "toy"
	cfg.set = set
	cfg.override["echo"] = echoBehavior
	rep := check(t, cfg, &Options{Fixtures: &set, Cases: []string{"echo", "throw", "host_objects", "composition"}})
	assert.Contains(t, result(t, rep, "host_objects").Reason, "host_objects: the toy fixture set has neither host_objects.allow nor host_objects.skip")
	assert.Equal(t, StatusPass, result(t, rep, "echo").Status, result(t, rep, "echo").Reason)
	assert.Equal(t, StatusFail, result(t, rep, "throw").Status)
	assert.Contains(t, result(t, rep, "throw").Reason, "throw: the toy fixture set has no script throw.toy")
	assert.Contains(t, result(t, rep, "composition").Reason, "no script composition_throw.toy")
}

// TestInstancesMustAgree: an instance that declares something other than
// the instance the gates were read from fails the case.
func TestInstancesMustAgree(t *testing.T) {
	cfg := newFakeConfig()
	var n atomic.Int64
	inner := cfg.factory()
	factory := func() (spi.Backend, error) {
		b, err := inner()
		if n.Add(1) > 1 {
			b.(*fake).cfg = &fakeConfig{caps: spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockSoft, FreshPerRun: true}, override: map[string]behavior{}}
		}
		return b, err
	}
	rep, err := Check(context.Background(), factory, &Options{Cases: []string{"echo", "abort_mid_run"}})
	require.NoError(t, err)
	for _, c := range rep.Cases {
		assert.Equal(t, StatusFail, c.Status)
		assert.Contains(t, c.Reason, c.Name+": this instance declares")
	}
}

// TestFactoryFailsPerCase: a factory that fails after the first call
// fails each case, not the run.
func TestFactoryFailsPerCase(t *testing.T) {
	cfg := newFakeConfig()
	inner := cfg.factory()
	var n atomic.Int64
	factory := func() (spi.Backend, error) {
		if n.Add(1) > 1 {
			return nil, errors.New("quota")
		}
		return inner()
	}
	rep, err := Check(context.Background(), factory, &Options{Cases: []string{"echo", "abort_mid_run"}})
	require.NoError(t, err)
	for _, c := range rep.Cases {
		assert.Equal(t, StatusFail, c.Status)
		assert.Contains(t, c.Reason, "the main factory failed: quota")
	}
}

func TestCheckStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Check(ctx, newFakeConfig().factory(), nil)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, rep)
	assert.Empty(t, rep.Cases)
}

func TestCaseNames(t *testing.T) {
	names := CaseNames()
	assert.Equal(t, []string{
		"echo", "throw", "throw_named", "syntax_error", "runaway_loop", "runaway_native", "allocation_bomb", "memory_limit",
		"deep_recursion", "rich_value", "async_value", "input_contract", "no_network", "no_escape", "host_objects",
		"fresh_per_run", "warm", "cpu_budget", "input_too_big", "abort", "abort_mid_run", "composition", "logs", "logs_order", "deterministic", "files_in", "files_out", "files_bounds",
		"host_calls", "host_errors", "host_limits", "host_stop", "host_stuck", "host_isolation", "host_clock", "host_exact", "host_concurrent",
	}, names)
	names[0] = "changed"
	assert.Equal(t, "echo", CaseNames()[0], "CaseNames returns a copy")
}

func TestReportFailed(t *testing.T) {
	var nilReport *Report
	assert.False(t, nilReport.Failed())
	assert.False(t, (&Report{Cases: []CaseResult{{Status: StatusPass}, {Status: StatusSkip}}}).Failed())
	assert.True(t, (&Report{Cases: []CaseResult{{Status: StatusPass}, {Status: StatusFail}}}).Failed())
}

func TestJSONDiff(t *testing.T) {
	for _, tc := range []struct {
		want, got, diff string
	}{
		{`{"a":1e-7}`, `{"a":1E-7}`, ""},
		{`{"a":1e-7}`, `{"a":0.0000001}`, ""},
		{`{"a":"é"}`, `{"a":"\u00e9"}`, ""},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, ""},
		{`{"a":2147483649}`, `{"a":2147483649.0}`, ""},
		{`{"a":9007199254740991}`, `{"a":9007199254740992}`, "at $.a: want the number 9007199254740991, got 9007199254740992"},
		{`{"a":1}`, `{"a":"1"}`, `at $.a: want the number 1, got "1"`},
		{`{"a":1}`, `{}`, `at $: key "a" is missing`},
		{`{}`, `{"a":1}`, `at $: unexpected key "a"`},
		{`[1,2]`, `[1]`, "at $: want 2 elements, got 1"},
		{`[[true]]`, `[[false]]`, "at $[0][0]: want true, got false"},
		{`{"a":[]}`, `{"a":{}}`, "at $.a: want an array"},
		{`{"a":{}}`, `{"a":[]}`, "at $.a: want an object"},
		{`null`, `null null`, "the result is not one JSON value"},
		{`null`, `nul`, "the result is not one JSON value"},
	} {
		assert.Equal(t, tc.diff == "", jsonDiff([]byte(tc.want), []byte(tc.got)) == "", "%s vs %s", tc.want, tc.got)
		if tc.diff != "" {
			assert.Contains(t, jsonDiff([]byte(tc.want), []byte(tc.got)), tc.diff)
		}
	}
	// The rich input is what it claims to be.
	var v map[string]any
	require.NoError(t, json.Unmarshal(richInput(), &v))
	assert.Equal(t, "😀 𝄞 😀", v["astral"])
	assert.Equal(t, "\"\\\n\t\r\b\f/\x00\x1f\u2028\u2029", v["escapes"])
	depth, x := 0, any(v["nested"])
	for {
		switch n := x.(type) {
		case map[string]any:
			x = n["d"]
		case []any:
			x = n[0]
		default:
			assert.Equal(t, "bottom 😀", n)
			assert.Equal(t, 100, depth)
			return
		}
		depth++
	}
}

func TestBigInputSize(t *testing.T) {
	in := bigInput()
	assert.InDelta(t, inputTooBigBytes, len(in), 2)
	assert.Less(t, int64(len(in)), effect.DefaultMaxInputBytes)
	assert.True(t, json.Valid(in))
}

func TestSpyKeepsOptionalBehaviour(t *testing.T) {
	cfg := newFakeConfig()
	b, err := cfg.factory()()
	require.NoError(t, err)
	s := newSpy(b)
	require.NoError(t, s.Warm(context.Background()))
	require.NoError(t, s.Close())
	assert.Equal(t, int64(1), cfg.closed.Load(), "closing the spy closes the inner backend")
	assert.Equal(t, goodCaps(), s.Capabilities())
}

// TestPerCaseFactoryProblems: a factory that misbehaves after the first
// call fails each case with what went wrong, and the kit goes on.
func TestPerCaseFactoryProblems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		later func() (spi.Backend, error)
		want  string
	}{
		{"nil backend", func() (spi.Backend, error) { return nil, nil }, "echo: the main factory returned a nil backend"},
		{"panic", func() (spi.Backend, error) { panic("later") }, "echo: the main factory panicked: later"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := newFakeConfig().factory()
			var n atomic.Int64
			factory := func() (spi.Backend, error) {
				if n.Add(1) > 1 {
					return tc.later()
				}
				return inner()
			}
			rep, err := Check(context.Background(), factory, &Options{Cases: []string{"echo", "throw"}})
			require.NoError(t, err)
			require.Len(t, rep.Cases, 2)
			assert.Equal(t, StatusFail, rep.Cases[0].Status)
			assert.Contains(t, rep.Cases[0].Reason, tc.want)
			assert.Equal(t, StatusFail, rep.Cases[1].Status)
		})
	}
}

// TestEffectRefusalFailsEveryCase: base effect options the effect refuses
// fail each case with the refusal, never a pass.
func TestEffectRefusalFailsEveryCase(t *testing.T) {
	cfg := newFakeConfig()
	rep := check(t, cfg, &Options{Effect: effect.Options{MaxOutputBytes: -1}, Cases: []string{"echo", "abort_mid_run", "cpu_budget"}})
	for _, c := range rep.Cases {
		assert.Equal(t, StatusFail, c.Status, c.Name)
		assert.Contains(t, c.Reason, c.Name+": effect.New refused the backend")
	}
	assert.Equal(t, cfg.made.Load(), cfg.closed.Load())
}

// TestCasePanicIsAFailure: a panic inside a case (here, from a broken
// effect) fails that case instead of crashing the run.
func TestCasePanicIsAFailure(t *testing.T) {
	withBrokenEffect(t, func(context.Context, string, func(context.Context) ([]byte, error)) ([]byte, error) {
		panic("effect bug")
	})
	rep := check(t, newFakeConfig(), &Options{Cases: []string{"echo", "throw"}})
	for _, c := range rep.Cases {
		assert.Equal(t, StatusFail, c.Status)
		assert.Contains(t, c.Reason, c.Name+": the case panicked: effect bug")
	}
}

// An engine may refuse the request by aborting the probe (an Extism host
// traps): that passes only when the typed error names the refused address
// and the canary saw nothing.
func TestNoNetworkRefusalByAbort(t *testing.T) {
	cfg := newFakeConfig()
	cfg.override["no_network"] = refuseNetwork("")
	rep := check(t, cfg, &Options{Cases: []string{"no_network"}})
	c := result(t, rep, "no_network")
	assert.Equal(t, StatusPass, c.Status, c.Reason)
	assert.Contains(t, c.Reason, "refused the request by aborting the probe")
}

// flakyFS serves each file once, then fails every later read of the file
// named fail: a fixture set that breaks in the middle of a case.
type flakyFS struct {
	fs.FS
	fail  string
	mu    sync.Mutex
	reads map[string]int
}

func (f *flakyFS) Open(name string) (fs.File, error) {
	f.mu.Lock()
	f.reads[name]++
	n := f.reads[name]
	f.mu.Unlock()
	if name == f.fail && n > 1 {
		return nil, errors.New("flaky: read failed")
	}
	return f.FS.Open(name)
}

// TestFixtureReadFailsMidCase: a script that cannot be prepared for a run
// fails the case with the reason, never a pass.
func TestFixtureReadFailsMidCase(t *testing.T) {
	for _, tc := range []struct {
		file, caseName, reason string
	}{
		{"echo.js", "echo", "echo: preparing fixture echo.js: "},
		{"fresh_per_run.js", "fresh_per_run", "fresh_per_run: preparing fresh_per_run: "},
		{"fresh_per_run.js", "warm", "warm: preparing fresh_per_run: "},
	} {
		t.Run(tc.caseName, func(t *testing.T) {
			cfg := newFakeConfig()
			cfg.wrap = func(f *fake) spi.Backend {
				return warmer{fake: f, warm: func(context.Context, *fake) error { return nil }}
			}
			set := javascript.Set()
			set.FS = &flakyFS{FS: set.FS, fail: tc.file, reads: map[string]int{}}
			rep := check(t, cfg, &Options{Fixtures: &set, Cases: []string{tc.caseName}})
			got := result(t, rep, tc.caseName)
			assert.Equal(t, StatusFail, got.Status, got.Reason)
			assert.Contains(t, got.Reason, tc.reason)
		})
	}
}
