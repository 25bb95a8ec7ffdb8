package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/spi"
)

// caseDef is one case: its gate, the fixture scripts it needs, and its body.
type caseDef struct {
	name    string
	gate    func(spi.Capabilities) string // "" runs the case; otherwise the skip reason
	scripts []string
	run     func(ctx context.Context, e *env)
	// proves names the capabilities the case measures ("network",
	// "wallClock=hard", "memory", "cpu", "freshPerRun"): Report.Proofs
	// lists its figures under each one the backend declares.
	proves []string
	// declarable marks a case that tests a feature some languages do not
	// have (asynchrony, enumerable globals): a fixture set may declare it
	// inapplicable with a file "<case>.skip" whose text is the reason, and
	// the case is skipped with it. Every other case needs its scripts.
	declarable bool
}

func always(spi.Capabilities) string { return "" }

func needMemory(c spi.Capabilities) string {
	if c.Memory {
		return ""
	}
	return "gated by Memory: the backend does not declare that it enforces the memory limit"
}

func needNetworkNone(c spi.Capabilities) string {
	if c.Network == spi.NetworkNone || c.Network == spi.NetworkAllowlist {
		return ""
	}
	return fmt.Sprintf("gated by Network none or allowlist: the backend declares network %q", c.Network)
}

func needFresh(c spi.Capabilities) string {
	if c.FreshPerRun {
		return ""
	}
	return "gated by FreshPerRun: the backend declares a reused environment"
}

func needCPU(c spi.Capabilities) string {
	if c.CPU {
		return ""
	}
	return "gated by CPU: the backend does not declare a CPU budget"
}

func needHardClock(c spi.Capabilities) string {
	if c.WallClock == spi.WallClockHard {
		return ""
	}
	return fmt.Sprintf("gated by WallClock hard: the backend declares wall clock %q, which cannot preempt a running script", c.WallClock)
}

func needHardClockOrMemory(c spi.Capabilities) string {
	if c.WallClock == spi.WallClockHard || c.Memory {
		return ""
	}
	return fmt.Sprintf("gated by WallClock hard or Memory: the backend declares wall clock %q and no memory limit, so nothing stops one long native operation", c.WallClock)
}

// allCases is every case, in run order.
var allCases = []*caseDef{
	{name: "echo", gate: always, scripts: []string{"echo"}, run: caseEcho},
	{name: "throw", gate: always, scripts: []string{"throw"}, run: caseThrow},
	{name: "throw_named", gate: always, scripts: []string{"throw_named"}, run: caseThrowNamed, declarable: true},
	{name: "syntax_error", gate: always, scripts: []string{"syntax_error"}, run: caseSyntaxError},
	{name: "runaway_loop", gate: always, scripts: []string{"runaway_loop", "echo"}, run: caseRunawayLoop, proves: []string{"wallClock=hard"}},
	{name: "runaway_native", gate: needHardClockOrMemory, scripts: []string{"runaway_native", "echo"}, run: caseRunawayNative, proves: []string{"wallClock=hard"}},
	{name: "allocation_bomb", gate: needMemory, scripts: []string{"allocation_bomb"}, run: caseAllocationBomb, proves: []string{"memory"}},
	{name: "memory_limit", gate: needMemory, scripts: []string{"memory_probe"}, run: caseMemoryLimit, proves: []string{"memory"}},
	{name: "deep_recursion", gate: always, scripts: []string{"deep_recursion", "echo"}, run: caseDeepRecursion},
	{name: "rich_value", gate: always, scripts: []string{"rich_value"}, run: caseRichValue},
	{name: "async_value", gate: always, scripts: []string{"async_value"}, run: caseAsyncValue, declarable: true},
	{name: "input_contract", gate: always, scripts: []string{"echo"}, run: caseInputContract},
	{name: "no_network", gate: needNetworkNone, scripts: []string{"no_network"}, run: caseNoNetwork, proves: []string{"network"}},
	{name: "no_escape", gate: needNetworkNone, scripts: []string{"no_escape"}, run: caseNoEscape, proves: []string{"network"}},
	{name: "host_objects", gate: always, run: caseHostObjects, proves: []string{"network"}, declarable: true},
	{name: "fresh_per_run", gate: needFresh, scripts: []string{"fresh_per_run"}, run: caseFreshPerRun, proves: []string{"freshPerRun"}},
	{name: "warm", gate: always, scripts: []string{"fresh_per_run", "echo"}, run: caseWarm, proves: []string{"freshPerRun"}},
	{name: "cpu_budget", gate: needCPU, scripts: []string{"cpu_budget", "cpu_light"}, run: caseCPUBudget, proves: []string{"cpu"}},
	{name: "input_too_big", gate: needMemory, scripts: []string{"input_too_big"}, run: caseInputTooBig, proves: []string{"memory"}},
	{name: "abort", gate: always, scripts: []string{"abort"}, run: caseAbort},
	{name: "abort_mid_run", gate: needHardClock, scripts: []string{"abort_mid_run"}, run: caseAbortMidRun, proves: []string{"wallClock=hard"}},
	{name: "composition", gate: always, scripts: []string{"composition_throw", "composition_output"}, run: caseComposition},
	{name: "logs", gate: needLogs, scripts: []string{"logs"}, run: caseLogs},
	{name: "logs_order", gate: needLogs, scripts: []string{"logs_order"}, run: caseLogsOrder},
	{name: "deterministic", gate: needDeterministic, scripts: []string{"durable_replay"}, run: caseDeterministic, proves: []string{"deterministic"}},
	{name: "files_in", gate: needFiles, scripts: []string{"files_in"}, run: caseFilesIn},
	{name: "files_out", gate: needFiles, scripts: []string{"files_out"}, run: caseFilesOut},
	{name: "files_bounds", gate: needFiles, scripts: []string{"files_bounds"}, run: caseFilesBounds},
}

// echoInput is the input of echo (and of the echo runs other cases make).
var echoInput = []byte(`{"text":"echo ✓ é","n":7,"list":[1,"two",null,true,false,{"k":[]}],"empty":{}}`)

// echoWith is echoInput with a "nonce" field.
func echoWith(nonce string) []byte {
	return append([]byte(`{"nonce":"`+nonce+`",`), echoInput[1:]...)
}

// echoSequential and echoConcurrent are how many runs echo makes on one
// instance, one after another and then at once, each with its own nonce.
const (
	echoSequential = 3
	echoConcurrent = 4
)

func caseEcho(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	one := func(batch string, i int) {
		in := echoWith(newNonce())
		got, err := e.eval(ctx, ev, "echo", in, e.k.limits)
		if err != nil {
			e.failf("%s run %d: the result must be the input, got %s", batch, i, describe(nil, err))
			return
		}
		if diff := jsonDiff(in, got); diff != "" {
			e.failf("%s run %d: the result must equal the run's own input: %s", batch, i, diff)
		}
	}
	for i := 1; i <= echoSequential; i++ {
		one("sequential", i)
	}
	var wg sync.WaitGroup
	for i := 1; i <= echoConcurrent; i++ {
		wg.Go(func() { one("concurrent", i) })
	}
	wg.Wait()
	// Large inputs at once, each past echoLargeBytes and of its own size:
	// a backend that hands large inputs through one slot (a shared buffer,
	// a file, a region of memory) gives one run another's input.
	for i := 1; i <= echoConcurrent; i++ {
		wg.Go(func() {
			in := echoLarge(newNonce(), i)
			got, err := e.eval(ctx, ev, "echo", in, e.k.limits)
			if err != nil {
				e.failf("large concurrent run %d (%d bytes): the result must be the input, got %s", i, len(in), describe(nil, err))
				return
			}
			if diff := jsonDiff(in, got); diff != "" {
				e.failf("large concurrent run %d (%d bytes): the result must equal the run's own input: %s", i, len(in), diff)
			}
		})
	}
	wg.Wait()
	e.figure("distinctRuns", echoSequential+2*echoConcurrent, "runs", "", 0)
	e.figure("largeInputBytes", float64(len(echoLarge(newNonce(), 1))), "bytes", ">=", echoLargeBytes)
}

// echoLargeBytes is the size past which echo's large runs go: 64 KiB, a
// common size for an inline buffer or a pipe.
const echoLargeBytes = 64 << 10

// echoLarge is the input of echo's large run i: echoWith(nonce) with a
// "pad" of the nonce repeated, echoLargeBytes + i KiB long.
func echoLarge(nonce string, i int) []byte {
	n := echoLargeBytes + i<<10
	pad := strings.Repeat(nonce, n/len(nonce)+1)[:n]
	return append([]byte(`{"pad":"`+pad+`",`), echoWith(nonce)[1:]...)
}

// throwText is the message throw's script raises.
const throwText = "conformance throw probe ✓ 42"

func caseThrow(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	input, _ := json.Marshal(map[string]string{"message": throwText})
	got, err := e.eval(ctx, ev, "throw", input, e.k.limits)
	f, typed := asFailure(err)
	switch {
	case !typed || f.Code != effect.CodeScriptError:
		e.failf("want a typed scriptError, got %s", describe(got, err))
	case !strings.Contains(f.Message, throwText):
		e.failf("the scriptError message must contain the thrown text %q, got %q", throwText, clip(f.Message))
	}
}

// throwNamedRuns are throw_named's runs: the error's name (a built-in
// class every language with named errors has, or the script's own
// class), and whether it is raised through the language's asynchrony (a
// promise's rejection).
var throwNamedRuns = []struct {
	name  string
	async bool
}{
	{"TypeError", false},
	{"ConformanceError", false},
	{"ReferenceError", true},
	{"ConformanceError", true},
}

// caseThrowNamed: a thrown error, and a rejection, arrive as a scriptError
// carrying the error's own name (declarable: a language whose errors have
// no names declares it inapplicable).
func caseThrowNamed(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	named := 0
	for _, r := range throwNamedRuns {
		text := throwText + " " + newNonce()
		input, _ := json.Marshal(map[string]any{"name": r.name, "message": text, "async": r.async})
		how := "thrown"
		if r.async {
			how = "rejected"
		}
		got, err := e.eval(ctx, ev, "throw_named", input, e.k.limits)
		f, typed := asFailure(err)
		switch {
		case !typed || f.Code != effect.CodeScriptError:
			e.failf("a %s %s must end in a typed scriptError, got %s", how, r.name, describe(got, err))
		case f.Name != r.name:
			e.failf("a %s %s must arrive named %q (the error's own name, not a fixed one), got %q", how, r.name, r.name, clip(f.Name))
		case !strings.Contains(f.Message, text):
			e.failf("a %s %s's message must contain the text %q, got %q", how, r.name, text, clip(f.Message))
		default:
			named++
		}
	}
	e.figure("namesKept", float64(named), "errors", "==", float64(len(throwNamedRuns)))
}

func caseSyntaxError(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	got, err := e.eval(ctx, ev, "syntax_error", []byte(`{}`), e.k.limits)
	if f, typed := asFailure(err); !typed || f.Code != effect.CodeScriptError {
		e.failf("a script that does not compile must end in a typed scriptError, got %s", describe(got, err))
	}
}

// spiedSetup is setup with a spy between the effect and the backend, so
// that the case times the backend's own return.
func (e *env) spiedSetup(limits spi.Limits, tweak func(*effect.Options)) (evaluator, *spy, bool) {
	b, ok := e.mainBackend()
	if !ok {
		return nil, nil, false
	}
	sp := newSpy(b)
	ev, ok := e.effectFor(sp, limits, tweak)
	return ev, sp, ok
}

// backendTook runs stem and returns what the effect produced and how long
// the backend's own Evaluate took: the effect returns at its deadline
// whatever the backend does, so the kit waits for the spy to see the
// backend return, for at most deadline + the stop grace + the idle wait.
// calls is the number of calls the spy has seen before this one.
func (e *env) backendTook(ctx context.Context, ev evaluator, sp *spy, calls int, stem string, input []byte, limits spi.Limits, deadline time.Duration) ([]byte, error, time.Duration, bool) {
	start := time.Now()
	got, err := e.eval(ctx, ev, stem, input, limits)
	end, returned := sp.waitReturned(calls+1, deadline+e.k.grace+e.k.idleWait)
	if !returned {
		return got, err, time.Since(start), false
	}
	return got, err, end.Sub(start), true
}

// warmUp runs one echo on ev, so that timings are not charged with an
// engine's cold start.
func (e *env) warmUp(ctx context.Context, ev evaluator, limits spi.Limits) bool {
	in := echoWith(newNonce())
	got, err := e.eval(ctx, ev, "echo", in, limits)
	if err != nil {
		e.failf("the warm-up echo on this instance failed: %s", describe(got, err))
		return false
	}
	if d := jsonDiff(in, got); d != "" {
		e.failf("the warm-up echo on this instance returned a wrong value: %s", d)
		return false
	}
	return true
}

func caseRunawayLoop(ctx context.Context, e *env) {
	limits := spi.Limits{WallClock: runawayWallClock, MemoryBytes: e.k.limits.MemoryBytes}
	ev, sp, ok := e.spiedSetup(limits, nil)
	if !ok || !e.warmUp(ctx, ev, limits) {
		return
	}
	deadline := time.Now().Add(runawayWallClock)
	got, err, took, returned := e.backendTook(ctx, ev, sp, 1, "runaway_loop", []byte(`{}`), limits, runawayWallClock)
	if !isLimit(err, effect.LimitCPU, effect.LimitWallClock) {
		e.failf("a loop that never ends must end in a typed limitExceeded cpu or wallClock, got %s", describe(got, err))
	}
	if e.k.caps.WallClock == spi.WallClockHard {
		if !returned {
			e.failf("the backend's own Evaluate had not returned %v after the wall clock %v (WallClock hard)", (e.k.grace + e.k.idleWait).Round(time.Millisecond), runawayWallClock)
			return
		}
		if !e.stopBound("stopAfter", took, runawayWallClock, "a loop under a hard wall clock") {
			return
		}
		e.waitIdleFrom(ctx, "the loop's limit", deadline)
		return
	}
	e.waitIdle(ctx, "the loop's limit")
}

func caseRunawayNative(ctx context.Context, e *env) {
	limits := spi.Limits{WallClock: runawayWallClock, MemoryBytes: e.k.limits.MemoryBytes}
	ev, sp, ok := e.spiedSetup(limits, nil)
	if !ok || !e.warmUp(ctx, ev, limits) {
		return
	}
	kinds := []effect.LimitKind{effect.LimitWallClock, effect.LimitMemory}
	if e.k.caps.CPU {
		kinds = append(kinds, effect.LimitCPU)
	}
	deadline := time.Now().Add(runawayWallClock)
	got, err, took, returned := e.backendTook(ctx, ev, sp, 1, "runaway_native", []byte(`{}`), limits, runawayWallClock)
	if !isLimit(err, kinds...) {
		e.failf("one long native operation must end in a typed limit (%s), got %s", kindNames(kinds), describe(got, err))
		if returned {
			return
		}
	}
	if !returned {
		e.failf("the backend's own Evaluate had not returned %v after the wall clock %v", (e.k.grace + e.k.idleWait).Round(time.Millisecond), runawayWallClock)
		return
	}
	if !e.stopBound("stopAfter", took, runawayWallClock, "one long native operation") {
		return
	}
	if e.k.caps.WallClock == spi.WallClockHard {
		e.waitIdleFrom(ctx, "the native operation's limit", deadline)
	} else {
		e.waitIdle(ctx, "the native operation's limit")
	}
	e.passf("stopped after %v", took.Round(time.Millisecond))
}

func caseAllocationBomb(ctx context.Context, e *env) {
	limits := e.k.limits
	ev, ok := e.setup(limits, nil)
	if !ok {
		return
	}
	bound := 4*limits.MemoryBytes + 64<<20
	stop := sampleRSS()
	got, err := e.eval(ctx, ev, "allocation_bomb", []byte(`{}`), limits)
	growth, how := stop()
	e.figure("hostGrowth", round1(float64(growth)/(1<<20)), "MiB", "<=", float64(bound>>20))
	if !isLimit(err, effect.LimitMemory) {
		e.failf("an allocation bomb must end in a typed limitExceeded memory, got %s", describe(got, err))
	}
	if growth > bound {
		e.failf("host memory (%s) grew by %s during the bomb, past the bound %s (4 × the memory limit + 64 MiB)", how, mib(growth), mib(bound))
		return
	}
	e.waitIdle(ctx, "the memory limit")
	e.passf("host memory (%s) grew by %s (bound %s)", how, mib(growth), mib(bound))
}

// memory_limit's figures: the probe holds memoryUnder × the limit (must
// succeed) and memoryOver × the limit (must end in limitExceeded memory),
// first under a limit memoryLarge × the kit's, then under the kit's own,
// on the same instance.
const (
	memoryUnder = 0.5
	memoryOver  = 1.25
	memoryLarge = 4
)

func caseMemoryLimit(ctx context.Context, e *env) {
	small := e.k.limits
	large := spi.Limits{WallClock: small.WallClock, MemoryBytes: memoryLarge * small.MemoryBytes}
	ev, ok := e.setup(large, nil)
	if !ok {
		return
	}
	run := func(step string, limits spi.Limits, share float64, wantOK bool) bool {
		n := int64(share * float64(limits.MemoryBytes))
		got, nonce, err := e.evalNonce(ctx, ev, "memory_probe", fmt.Appendf(nil, "%d", n), limits)
		e.figure(step+"HeldMiB", round1(float64(n)/(1<<20)), "MiB", "", 0)
		if wantOK {
			if err != nil {
				e.failf("%s: holding %s under a memory limit of %s must succeed, got %s", step, mib(n), mib(limits.MemoryBytes), describe(got, err))
				return false
			}
			if d := jsonDiff([]byte(`"`+nonce+`"`), got); d != "" {
				e.failf("%s: the probe must answer its nonce: %s", step, d)
				return false
			}
			return true
		}
		if !isLimit(err, effect.LimitMemory) {
			e.failf("%s: holding %s (%.2f × the limit) under a memory limit of %s must end in a typed limitExceeded memory, got %s", step, mib(n), share, mib(limits.MemoryBytes), describe(got, err))
			return false
		}
		return true
	}
	// The large limit first, then the small one on the same instance: a
	// backend that keeps the first request's limit lets the second probe
	// through.
	// The case ends in a success; allocation_bomb checks that the CPU falls
	// to idle after a memory limit.
	_ = run("large", large, memoryOver/memoryLarge, true) &&
		run("over", small, memoryOver, false) &&
		run("under", small, memoryUnder, true)
}

func caseDeepRecursion(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	got, err := e.eval(ctx, ev, "deep_recursion", []byte(`{}`), e.k.limits)
	if f, typed := asFailure(err); !typed || (f.Code != effect.CodeScriptError && f.Code != effect.CodeLimitExceeded) {
		e.failf("unbounded recursion must end in a typed scriptError or limitExceeded, got %s", describe(got, err))
	}
	got, err = e.eval(ctx, ev, "echo", echoInput, e.k.limits)
	if err != nil {
		e.failf("the next run on the same backend instance must succeed, got %s", describe(got, err))
		return
	}
	if diff := jsonDiff(echoInput, got); diff != "" {
		e.failf("the next run on the same backend instance returned a wrong value: %s", diff)
	}
}

func caseRichValue(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	in := richInput()
	got, err := e.eval(ctx, ev, "rich_value", in, e.k.limits)
	if err != nil {
		e.failf("the rich value must come back, got %s", describe(got, err))
		return
	}
	if diff := jsonDiff(in, got); diff != "" {
		e.failf("the rich value must come back exactly: %s", diff)
	}
}

// The input contract's figures.
const (
	contractKeys        = 1000
	contractStringBytes = 256 << 10
	contractArrayLen    = 20_000
)

// contractInput is input_contract's input: many keys in an order that is
// neither sorted nor insertion-hash order, a 1 MiB string of mixed
// characters, and a long array of mixed numbers, with a nonce first.
func contractInput(nonce string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"nonce":"%s","keys":{`, nonce)
	for i := range contractKeys {
		if i > 0 {
			b.WriteByte(',')
		}
		// Descending, non-numeric keys: an engine that sorts keys, or
		// orders them by hash, changes the order.
		fmt.Fprintf(&b, `"k%05d_%c":%d`, contractKeys-i, 'a'+rune(i%26), i)
	}
	b.WriteString(`},"long":"`)
	unit := `abc é ✓ 😀 \\ \" `
	for b.Len() < contractStringBytes {
		b.WriteString(unit)
	}
	b.WriteString(`","array":[`)
	for i := range contractArrayLen {
		if i > 0 {
			b.WriteByte(',')
		}
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "%d", i)
		case 1:
			fmt.Fprintf(&b, "-%d", i*7919)
		case 2:
			fmt.Fprintf(&b, "%d.5", i)
		default:
			b.WriteString(`"s"`)
		}
	}
	b.WriteString(`],"order":{"z":1,"a":2,"m":3,"b":4}}`)
	return b.Bytes()
}

func caseInputContract(ctx context.Context, e *env) {
	ev, sp, ok := e.spiedSetup(e.k.limits, nil)
	if !ok {
		return
	}
	in := contractInput(newNonce())
	e.figure("inputBytes", float64(len(in)), "bytes", "", 0)
	got, err := e.eval(ctx, ev, "echo", in, e.k.limits)
	if err != nil {
		e.failf("a %d-byte input (%d keys, a %d-byte string, a %d-element array) must come back, got %s", len(in), contractKeys, contractStringBytes, contractArrayLen, describe(got, err))
		return
	}
	if diff := jsonDiff(in, got); diff != "" {
		e.failf("the input must come back exactly: %s", diff)
		return
	}
	// The effect canonicalises the value it returns (keys sorted), so the
	// order is checked where it can be seen: the backend's own value
	// against the input it was handed.
	bin, bout := sp.last()
	if diff := keyOrderDiff(bin, bout); diff != "" {
		e.failf("the backend's value must keep the input's key order: %s", diff)
	}
}

// probeFields decodes a probe's report: an object whose named fields are
// all present and are lists of names, except "clock", which is kept as
// JSON text.
func probeFields(got []byte, names ...string) (lists map[string][]string, clock []byte, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(got, &m) != nil {
		return nil, nil, false
	}
	lists = map[string][]string{}
	for _, name := range names {
		raw, present := m[name]
		if !present {
			return nil, nil, false
		}
		if name == "clock" {
			clock = bytes.TrimSpace(raw)
			continue
		}
		var l []string
		if json.Unmarshal(raw, &l) != nil || l == nil {
			return nil, nil, false
		}
		lists[name] = l
	}
	return lists, clock, true
}

func caseNoNetwork(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	var hits atomic.Int64
	// The canary is a loopback HTTP server, as httptest's would be; the
	// kit runs in programs (the sandbank binary) that link no httptest.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.failf("the loopback canary could not listen: %v", err)
		return
	}
	canary := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("canary"))
	})}
	go func() { _ = canary.Serve(ln) }()
	defer canary.Close()
	canaryAddr := ln.Addr().String()

	input, _ := json.Marshal(map[string]string{"url": "http://" + canaryAddr + "/sandbank-canary"})
	got, err := e.eval(ctx, ev, "no_network", input, e.k.limits)
	// A request the engine started just before the run ended still counts.
	time.Sleep(50 * time.Millisecond)
	if n := hits.Load(); n > 0 {
		e.failf("the loopback canary saw %d request(s) from a backend that declares Network none", n)
	}
	if err != nil {
		// Some engines refuse a network call by aborting the script (an
		// Extism host traps on a host it does not allow, and wasm cannot
		// catch a trap). That is a refusal too, provided the canary saw
		// nothing and the typed error names the refused address: a probe
		// that merely broke does not pass.
		var f *effect.Failure
		if hits.Load() == 0 && errors.As(err, &f) && f.Code == effect.CodeScriptError &&
			strings.Contains(f.Message, canaryAddr) {
			e.passf("the engine refused the request by aborting the probe: %s", clip(f.Message))
			return
		}
		e.failf("the network probe must finish with its report, or abort with a typed error naming the refused address, got %s", describe(got, err))
		return
	}
	r, _, ok := probeFields(got, "tried", "reached")
	if !ok {
		e.failf(`the network probe must return {"tried": [...], "reached": [...]}, got %s`, clip(string(got)))
		return
	}
	if len(r["reached"]) > 0 {
		e.failf("the network probe reached the canary through %s", strings.Join(r["reached"], ", "))
		return
	}
	e.passf("tried: %s", strings.Join(r["tried"], ", "))
}

func caseNoEscape(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	got, err := e.eval(ctx, ev, "no_escape", []byte(`{}`), e.k.limits)
	if err != nil {
		e.failf("the escape probe must finish with its report, got %s", describe(got, err))
		return
	}
	now := time.Now()
	r, clock, ok := probeFields(got, "found", "clock")
	if !ok {
		e.failf(`the escape probe must return {"found": [...], "clock": MS or null}, got %s`, clip(string(got)))
		return
	}
	if len(r["found"]) > 0 {
		e.failf("the escape probe obtained host capabilities: %s", strings.Join(r["found"], ", "))
	}
	e.checkClock(clock, now)
}

// checkClock holds the probe's clock reading to the fake clock: null when
// the set (and Options.FakeClock) name none, otherwise a reading in
// [start, start + fixtures.ClockSlack].
func (e *env) checkClock(clock []byte, now time.Time) {
	if e.k.clock == nil {
		if !bytes.Equal(clock, []byte("null")) {
			e.failf(`the escape probe's "clock" must be null: the %s fixture set names no fake clock, got %s`, e.k.set.Language, clip(string(clock)))
		}
		return
	}
	var ms float64
	if jerr := json.Unmarshal(clock, &ms); jerr != nil || bytes.Equal(clock, []byte("null")) {
		e.failf(`the escape probe's "clock" must be a number (the fake clock starts at %d), got %s`, *e.k.clock, clip(string(clock)))
		return
	}
	start := *e.k.clock
	off := int64(ms) - start
	e.figure("clockOffset", float64(off), "ms", "<=", float64(fixtures.ClockSlack))
	if off < 0 || off > fixtures.ClockSlack || ms != float64(int64(ms)) {
		seen := time.UnixMilli(int64(ms))
		e.failf("the script's clock reads %s (%v ms), not the documented fake clock %s + at most %d ms (host clock %s)",
			seen.UTC().Format(time.RFC3339Nano), clip(string(clock)), time.UnixMilli(start).UTC().Format(time.RFC3339), fixtures.ClockSlack, now.UTC().Format(time.RFC3339))
	}
}

// freshAnswer checks one fresh_per_run answer: {"runs":1}, plus
// "nonce": the script's nonce when the set's script carries
// fixtures.NoncePlaceholder.
func (e *env) freshAnswer(what string, got []byte, err error, nonce string) {
	if err != nil {
		e.failf("%s must answer {\"runs\":1}, got %s", what, describe(got, err))
		return
	}
	var r struct {
		Runs  *json.Number `json:"runs"`
		Nonce *string      `json:"nonce"`
	}
	d := json.NewDecoder(bytes.NewReader(got))
	d.UseNumber()
	if d.Decode(&r) != nil || r.Runs == nil {
		e.failf(`%s must answer {"runs": COUNT}, got %s`, what, clip(string(got)))
		return
	}
	if r.Runs.String() != "1" {
		e.failf("%s saw state from an earlier run: %s", what, clip(string(got)))
		return
	}
	if e.carriesNonce("fresh_per_run") && (r.Nonce == nil || *r.Nonce != nonce) {
		e.failf("%s must answer its script's nonce %q, got %s: the answer did not come from running this script", what, nonce, clip(string(got)))
	}
}

// carriesNonce reports whether the set's script for stem holds
// fixtures.NoncePlaceholder, so that its answer must carry the nonce. A
// set whose scripts cannot hold one (a binary format) is varied by its
// Salter only, and the nonce travels in the input where the case has one.
func (e *env) carriesNonce(stem string) bool {
	b, err := e.k.set.Script(stem)
	return err == nil && bytes.Contains(b, []byte(fixtures.NoncePlaceholder))
}

func caseFreshPerRun(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	// The sequential batch runs ONE script text (state kept per script is
	// seen); the concurrent batch runs a distinct text each (a swapped or
	// shared answer is seen).
	addr, nonce, err := e.script("fresh_per_run")
	if err != nil {
		e.failf("preparing fresh_per_run: %v", err)
		return
	}
	for i := 1; i <= freshSequential; i++ {
		got, err := e.evalAt(ctx, ev, addr, []byte(`{}`), e.k.limits)
		e.freshAnswer(fmt.Sprintf("sequential run %d of %d", i, freshSequential), got, err, nonce)
	}
	var wg sync.WaitGroup
	for i := 1; i <= freshConcurrent; i++ {
		wg.Go(func() {
			got, n, err := e.evalNonce(ctx, ev, "fresh_per_run", []byte(`{}`), e.k.limits)
			e.freshAnswer(fmt.Sprintf("concurrent run %d of %d", i, freshConcurrent), got, err, n)
		})
	}
	wg.Wait()
	e.figure("freshRuns", freshSequential+freshConcurrent, "runs", "", 0)
}

// caseWarm calls Warm (when the backend is a spi.Warmer) twice: with a
// context that ends after warmDeadline, which it must honour (return
// within warmDeadline plus the stop grace), and with the warm timeout,
// which it must finish within. Then the instance must still answer, and
// answer fresh when it declares FreshPerRun.
func caseWarm(ctx context.Context, e *env) {
	b, ok := e.mainBackend()
	if !ok {
		return
	}
	w, isWarmer := b.(spi.Warmer)
	if !isWarmer {
		e.passf("the backend is not a spi.Warmer")
		return
	}
	warm := func(d time.Duration) (time.Duration, error, bool) {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return bounded(d+e.k.grace, "Warm", func() error { return w.Warm(wctx) })
	}
	took, _, returned := warm(warmDeadline)
	e.figure("warmCancelledAfter", ms(took), "ms", "<=", ms(warmDeadline+e.k.grace))
	if !returned {
		e.failf("Warm with a context that ends after %v had not returned %v later: Warm must honour its context", warmDeadline, e.k.grace)
		return
	}
	took, err, returned := warm(e.k.warmMax)
	e.figure("warmTook", ms(took), "ms", "<=", ms(e.k.warmMax+e.k.grace))
	if !returned {
		e.failf("Warm had not returned within %v (Options.WarmTimeout) plus the stop grace", e.k.warmMax)
		return
	}
	if err != nil {
		e.failf("Warm with %v failed: %v", e.k.warmMax, err)
		return
	}
	ev, ok := e.effectFor(b, e.k.limits, nil)
	if !ok {
		return
	}
	if !e.warmUp(ctx, ev, e.k.limits) {
		return
	}
	if e.k.caps.FreshPerRun {
		addr, nonce, err := e.script("fresh_per_run")
		if err != nil {
			e.failf("preparing fresh_per_run: %v", err)
			return
		}
		for i := 1; i <= 2; i++ {
			got, err := e.evalAt(ctx, ev, addr, []byte(`{}`), e.k.limits)
			e.freshAnswer(fmt.Sprintf("run %d after Warm", i), got, err, nonce)
		}
	}
}

// hostObjectsAllow is the file of a fixture set that lists the language's
// standard names, one per line, for host_objects. A set whose language
// cannot enumerate what a script reaches declares the case inapplicable
// instead, with host_objects.skip (see caseDef.declarable).
const hostObjectsAllow = "host_objects.allow"

// hostObjectsDepth is how deep host_objects' script walks: the globals,
// their own properties, and theirs.
const hostObjectsDepth = 2

func caseHostObjects(ctx context.Context, e *env) {
	allowText, err := fs.ReadFile(e.k.set.FS, hostObjectsAllow)
	if err != nil {
		e.failf("the %s fixture set has neither %s nor %s", e.k.set.Language, hostObjectsAllow, skipFile("host_objects"))
		return
	}
	allowed := map[string]bool{}
	for _, l := range strings.Split(string(allowText), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			allowed[l] = true
		}
	}
	if !e.checkScripts([]string{"host_objects"}) {
		return
	}
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	got, nonce, err := e.evalNonce(ctx, ev, "host_objects", []byte(`{}`), e.k.limits)
	if err != nil {
		e.failf("the enumeration probe must finish with its report, got %s", describe(got, err))
		return
	}
	var r struct {
		Names []string `json:"names"`
		Nonce string   `json:"nonce"`
	}
	if json.Unmarshal(got, &r) != nil || r.Names == nil {
		e.failf(`the enumeration probe must return {"names": [...], "nonce": NONCE}, got %s`, clip(string(got)))
		return
	}
	if r.Nonce != nonce {
		e.failf("the enumeration probe must answer its nonce %q, got %q", nonce, clip(r.Nonce))
		return
	}
	var extra []string
	declared := 0
	for _, n := range r.Names {
		switch {
		case allowed[n]:
		case e.declaredHostObject(n):
			declared++
		default:
			extra = append(extra, n)
		}
	}
	e.figure("namesDeclared", float64(declared), "names", "", 0)
	e.figure("namesSeen", float64(len(r.Names)), "names", "", 0)
	e.figure("namesNotStandard", float64(len(extra)), "names", "==", 0)
	if len(extra) > 0 {
		e.failf("the script reaches %d name(s) outside the language's standard set: %s", len(extra), clip(groupPaths(extra)))
	}
	// A declaration is a claim the kit measures both ways: every name
	// declared as provided is one the script reaches.
	missing := e.missingHostObjects(r.Names)
	e.figure("declaredNotSeen", float64(len(missing)), "names", "==", 0)
	if len(missing) > 0 {
		e.failf("%d declared host object(s) are not there for the script to reach: %s (a backend declares what it installs, no more)", len(missing), clip(strings.Join(missing, ", ")))
	}
}

// missingHostObjects returns the declared host objects (the backend's
// and Options.HostObjects) that are not among seen: a path, cut to
// hostObjectsDepth segments, or a prefix's name itself.
func (e *env) missingHostObjects(seen []string) []string {
	have := make(map[string]bool, len(seen))
	for _, n := range seen {
		have[n] = true
	}
	var missing []string
	for _, d := range e.k.opts.HostObjects {
		p := strings.TrimSuffix(d, ".*")
		if parts := strings.Split(p, "."); len(parts) > hostObjectsDepth {
			p = strings.Join(parts[:hostObjectsDepth], ".")
		}
		if !have[p] && !slices.Contains(missing, d) {
			missing = append(missing, d)
		}
	}
	return missing
}

// groupPaths renders paths grouped by their first segment, sorted:
// "console (+6 under it), print (+2 under it), sandbankHost".
func groupPaths(paths []string) string {
	under := map[string]int{}
	var tops []string
	for _, p := range paths {
		top, _, nested := strings.Cut(p, ".")
		if _, ok := under[top]; !ok {
			tops = append(tops, top)
			under[top] = 0
		}
		if nested {
			under[top]++
		}
	}
	slices.Sort(tops)
	out := make([]string, len(tops))
	for i, t := range tops {
		out[i] = t
		if n := under[t]; n > 0 {
			out[i] += fmt.Sprintf(" (+%d under it)", n)
		}
	}
	return strings.Join(out, ", ")
}

// declaredHostObject reports whether Options.HostObjects names n.
func (e *env) declaredHostObject(n string) bool {
	for _, d := range e.k.opts.HostObjects {
		if d == n {
			return true
		}
		if p, ok := strings.CutSuffix(d, ".*"); ok && (n == p || strings.HasPrefix(n, p+".")) {
			return true
		}
	}
	return false
}

func caseCPUBudget(ctx context.Context, e *env) {
	b, ok := e.backend(e.k.cpu, "CPU-budget")
	if !ok {
		return
	}
	if c := b.Capabilities(); c.Language != e.k.caps.Language || !c.CPU {
		e.failf("the CPU-budget factory's backend must declare language %q and CPU, it declares %+v", e.k.caps.Language, c)
		return
	}
	limits := spi.Limits{WallClock: cpuBudgetWallClock, MemoryBytes: e.k.limits.MemoryBytes}
	sp := newSpy(b)
	ev, ok := e.effectFor(sp, limits, nil)
	if !ok {
		return
	}
	// A script that needs less than its budget finishes.
	got, nonce, err := e.evalNonce(ctx, ev, "cpu_light", []byte(`{}`), limits)
	if err != nil {
		e.failf("a script that needs less than the small CPU budget must finish, got %s", describe(got, err))
		return
	}
	if e.carriesNonce("cpu_light") {
		if d := jsonDiff([]byte(`"`+nonce+`"`), got); d != "" {
			e.failf("cpu_light must answer its nonce: %s", d)
			return
		}
	}
	got, err, took, returned := e.backendTook(ctx, ev, sp, 1, "cpu_budget", []byte(`{}`), limits, cpuBudgetStop)
	if !isLimit(err, effect.LimitCPU) {
		e.failf("a loop under a small CPU budget (wall clock %v) must end in a typed limitExceeded cpu, got %s", cpuBudgetWallClock, describe(got, err))
		return
	}
	e.figure("stopAfter", ms(took), "ms", "<=", ms(cpuBudgetStop))
	if !returned || took > cpuBudgetStop {
		e.failf("the CPU budget stopped the loop after %v, not within %v (half the wall clock %v): a wall clock is not a CPU budget", took.Round(time.Millisecond), cpuBudgetStop, cpuBudgetWallClock)
		return
	}
	e.waitIdle(ctx, "the CPU budget")
}

// bigInput is input_too_big's input: "[0,0,…,0]", inputTooBigBytes long.
func bigInput() []byte {
	n := (inputTooBigBytes - 1) / 2
	b := make([]byte, 0, 2*n+1)
	b = append(b, '[')
	b = append(b, bytes.Repeat([]byte("0,"), n-1)...)
	return append(b, "0]"...)
}

func caseInputTooBig(ctx context.Context, e *env) {
	limits := spi.Limits{WallClock: e.k.limits.WallClock, MemoryBytes: inputTooBigMemoryBytes}
	in := bigInput()
	ev, ok := e.setup(limits, func(o *effect.Options) {
		if ceiling := int64(len(in)) + 1; o.MaxInputBytes < ceiling {
			o.MaxInputBytes = max(effect.DefaultMaxInputBytes, ceiling)
		}
	})
	if !ok {
		return
	}
	got, err := e.eval(ctx, ev, "input_too_big", in, limits)
	f, typed := asFailure(err)
	switch {
	case !typed || f.Code != effect.CodeInputTooLarge:
		e.failf("a %d-byte input that cannot be parsed within %d bytes of memory must end in a typed inputTooLarge, got %s", len(in), inputTooBigMemoryBytes, describe(got, err))
	case f.Limit != inputTooBigMemoryBytes:
		e.failf("the inputTooLarge must come from the backend at the memory limit %d, got one with limit %d", inputTooBigMemoryBytes, f.Limit)
	}
}

func caseAbort(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	got, err := e.eval(cctx, ev, "abort", echoInput, e.k.limits)
	if !errors.Is(err, context.Canceled) || got != nil {
		e.failf("an already-cancelled context must yield context.Canceled and no value, got %s", describe(got, err))
		return
	}
	if _, typed := asFailure(err); typed {
		e.failf("an already-cancelled context must yield the cancellation, not a typed failure: %s", describe(got, err))
	}
}

func caseAbortMidRun(ctx context.Context, e *env) {
	b, ok := e.mainBackend()
	if !ok {
		return
	}
	sp := newSpy(b)
	limits := spi.Limits{WallClock: abortWallClock, MemoryBytes: e.k.limits.MemoryBytes}
	ev, ok := e.effectFor(sp, limits, nil)
	if !ok {
		return
	}
	// The case keeps a quarter of the watchdog for itself, so that a
	// backend that does not stop fails with this case's reason.
	waitCtx, waitCancel := context.WithTimeout(ctx, e.k.watchdog*3/4)
	defer waitCancel()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		got []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := e.eval(runCtx, ev, "abort_mid_run", []byte(`{}`), limits)
		done <- result{got, err}
	}()
	select {
	case <-sp.entered:
	case r := <-done:
		e.failf("the run ended before it could be cancelled: %s", describe(r.got, r.err))
		return
	case <-waitCtx.Done():
		e.failf("the backend was never called")
		return
	}
	// Let the loop run for a moment, so that a backend that returns at once
	// is seen returning before the cancellation rather than masked by it.
	settle := time.NewTimer(abortSettle)
	defer settle.Stop()
	select {
	case <-sp.returned:
		// The backend finished a loop that never ends, before any
		// cancellation.
		select {
		case r := <-done:
			hint := ""
			if isLimit(r.err, effect.LimitCPU) {
				hint = fmt.Sprintf(" (the main factory's CPU budget must outlast %v; give cpu_budget its small budget through Options.CPUBudget)", abortSettle)
			}
			e.failf("the run ended before it could be cancelled: %s%s", describe(r.got, r.err), hint)
		case <-waitCtx.Done():
			e.failf("the run ended before it could be cancelled, and the effect did not return")
		}
		return
	case <-settle.C:
	}
	cancel()
	cancelled := time.Now()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || r.got != nil {
			e.failf("a run cancelled after the backend was called must yield context.Canceled, got %s", describe(r.got, r.err))
		}
	case <-waitCtx.Done():
		e.failf("the effect did not return after the cancellation")
		return
	}
	grace := time.NewTimer(e.k.grace)
	defer grace.Stop()
	select {
	case <-sp.returned:
		took := time.Since(cancelled)
		if end, ok := sp.waitReturned(1, 0); ok {
			took = end.Sub(cancelled)
		}
		e.figure("returnedAfterCancel", ms(took), "ms", "<=", ms(e.k.grace))
	case <-grace.C:
		e.figure("returnedAfterCancel", ms(time.Since(cancelled)), "ms", "<=", ms(e.k.grace))
		e.failf("the backend's own Evaluate had not returned %v (the stop grace) after the cancellation: a WallClock hard backend must stop when ctx is done", e.k.grace)
		return
	}
	e.waitIdleFrom(ctx, "the cancellation", cancelled)
}

func caseComposition(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, func(o *effect.Options) { o.MaxOutputBytes = compositionMaxOutputBytes })
	if !ok {
		return
	}
	got, err := e.eval(ctx, ev, "composition_throw", []byte(`{}`), e.k.limits)
	f, typed := asFailure(err)
	if !typed || f.Code != effect.CodeScriptError {
		e.failf("composition_throw must end in a typed scriptError, got %s", describe(got, err))
	} else {
		for _, field := range []struct{ name, text string }{{"message", f.Message}, {"name", f.Name}} {
			if !utf8.ValidString(field.text) {
				e.failf("the scriptError %s is not storable: invalid UTF-8 (or an encoded lone surrogate)", field.name)
			}
			if n := utf16Units(field.text); n > effect.MaxTextUnits+markerAllowance {
				e.failf("the scriptError %s is %d UTF-16 units, past the bound %d plus a marker", field.name, n, effect.MaxTextUnits)
			}
		}
		if f.Message == "" {
			e.failf("the scriptError message is empty: the bounded text must keep the start of the thrown message")
		}
	}
	got, err = e.eval(ctx, ev, "composition_output", []byte(`{}`), e.k.limits)
	if !isLimit(err, effect.LimitOutput) {
		e.failf("an output past MaxOutputBytes (%d) must end in a typed limitExceeded output, got %s", compositionMaxOutputBytes, describe(got, err))
	}
}

// asFailure reports err as a typed failure.
func asFailure(err error) (*effect.Failure, bool) {
	var f *effect.Failure
	if errors.As(err, &f) && f != nil {
		return f, true
	}
	return nil, false
}

// isLimit reports whether err is a typed limitExceeded of one of kinds.
func isLimit(err error, kinds ...effect.LimitKind) bool {
	f, ok := asFailure(err)
	if !ok || f.Code != effect.CodeLimitExceeded {
		return false
	}
	for _, k := range kinds {
		if f.Kind == k {
			return true
		}
	}
	return false
}

func kindNames(kinds []effect.LimitKind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = k.String()
	}
	return strings.Join(s, " or ")
}

// describe renders what a run produced, as evidence for a failure.
func describe(got []byte, err error) string {
	if err == nil {
		return "a value: " + clip(string(got))
	}
	if got != nil {
		return "a value (" + clip(string(got)) + ") together with " + describe(nil, err)
	}
	if f, ok := asFailure(err); ok {
		switch f.Code {
		case effect.CodeLimitExceeded:
			return "typed limitExceeded " + f.Kind.String()
		case effect.CodeScriptError:
			return fmt.Sprintf("typed scriptError %s %q", f.Name, clip(f.Message))
		case effect.CodeInputTooLarge:
			return fmt.Sprintf("typed inputTooLarge (bytes %d, limit %d)", f.Bytes, f.Limit)
		default:
			return fmt.Sprintf("typed %s %q", f.Code, clip(f.Reason))
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "the cancellation: " + clip(err.Error())
	}
	return "an untyped error: " + clip(err.Error())
}

// clip shortens evidence to at most 200 bytes, on a rune boundary.
func clip(s string) string {
	const n = 200
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…(%d bytes)", len(s))
}

func utf16Units(s string) int {
	n := 0
	for _, r := range s {
		n += len(utf16.Encode([]rune{r}))
	}
	return n
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// rawJSON passes kit-made JSON text to the effect as is.
type rawJSON = json.RawMessage

// skipFile is the file in which a fixture set declares a declarable case
// inapplicable to its language.
func skipFile(caseName string) string { return caseName + ".skip" }

// declaredInapplicable returns the reason the fixture set gives for not
// answering case c, when c is declarable and the set has its skip file.
func (k *kit) declaredInapplicable(c *caseDef) (string, bool) {
	if !c.declarable || k.set.FS == nil {
		return "", false
	}
	reason, err := fs.ReadFile(k.set.FS, skipFile(c.name))
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("the %s fixture set declares: %s", k.set.Language, strings.TrimSpace(string(reason))), true
}

// asyncText is the text async_value's script awaits and rejects with.
const asyncText = "conformance async probe ✓ 43"

// caseAsyncValue checks that a promise completion value is awaited: its
// value is the result (never the promise written as {}), a rejection is a
// typed scriptError with the rejection's message, and a promise that never
// settles is a typed scriptError within the wall clock.
func caseAsyncValue(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	list := []any{1, "two", nil, map[string]any{"k": []any{}}}
	in := func(mode string) []byte {
		b, _ := json.Marshal(map[string]any{"mode": mode, "n": 41, "text": asyncText, "list": list})
		return b
	}
	want, _ := json.Marshal(map[string]any{"n": 42, "text": asyncText + "✓", "list": list})
	got, err := e.eval(ctx, ev, "async_value", in("value"), e.k.limits)
	if err != nil {
		e.failf("an awaited promise must give its value, got %s", describe(got, err))
		return
	}
	if diff := jsonDiff(want, got); diff != "" {
		e.failf("the result must be the promise's value, not the promise: %s", diff)
		return
	}
	got, err = e.eval(ctx, ev, "async_value", in("reject"), e.k.limits)
	f, typed := asFailure(err)
	switch {
	case !typed || f.Code != effect.CodeScriptError:
		e.failf("a rejected promise must end in a typed scriptError, got %s", describe(got, err))
		return
	case !strings.Contains(f.Message, asyncText):
		e.failf("the scriptError message must contain the rejection's message %q, got %q", asyncText, clip(f.Message))
		return
	}
	limits := spi.Limits{WallClock: runawayWallClock, MemoryBytes: e.k.limits.MemoryBytes}
	start := time.Now()
	got, err = e.eval(ctx, ev, "async_value", in("pending"), limits)
	took := time.Since(start)
	e.figure("pendingReported", ms(took), "ms", "<=", ms(runawayWallClock+nativeGrace))
	if f, typed := asFailure(err); !typed || f.Code != effect.CodeScriptError {
		e.failf("a promise that never settles must end in a typed scriptError, got %s", describe(got, err))
		return
	}
	if took > runawayWallClock+nativeGrace {
		e.failf("the never-settling promise was reported after %v, past the wall clock %v plus the grace %v", took.Round(time.Millisecond), runawayWallClock, nativeGrace)
	}
}
