package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
)

// caseDef is one case: its gate, the fixture scripts it needs, and its body.
type caseDef struct {
	name    string
	gate    func(spi.Capabilities) string // "" runs the case; otherwise the skip reason
	scripts []string
	run     func(ctx context.Context, e *env)
}

func always(spi.Capabilities) string { return "" }

func needMemory(c spi.Capabilities) string {
	if c.Memory {
		return ""
	}
	return "gated by Memory: the backend does not declare that it enforces the memory limit"
}

func needNetworkNone(c spi.Capabilities) string {
	if c.Network == spi.NetworkNone {
		return ""
	}
	return fmt.Sprintf("gated by Network none: the backend declares network %q", c.Network)
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
	{name: "syntax_error", gate: always, scripts: []string{"syntax_error"}, run: caseSyntaxError},
	{name: "runaway_loop", gate: always, scripts: []string{"runaway_loop"}, run: caseRunawayLoop},
	{name: "runaway_native", gate: needHardClockOrMemory, scripts: []string{"runaway_native", "echo"}, run: caseRunawayNative},
	{name: "allocation_bomb", gate: needMemory, scripts: []string{"allocation_bomb"}, run: caseAllocationBomb},
	{name: "deep_recursion", gate: always, scripts: []string{"deep_recursion", "echo"}, run: caseDeepRecursion},
	{name: "rich_value", gate: always, scripts: []string{"rich_value"}, run: caseRichValue},
	{name: "no_network", gate: needNetworkNone, scripts: []string{"no_network"}, run: caseNoNetwork},
	{name: "no_escape", gate: needNetworkNone, scripts: []string{"no_escape"}, run: caseNoEscape},
	{name: "fresh_per_run", gate: needFresh, scripts: []string{"fresh_per_run"}, run: caseFreshPerRun},
	{name: "cpu_budget", gate: needCPU, scripts: []string{"cpu_budget"}, run: caseCPUBudget},
	{name: "input_too_big", gate: needMemory, scripts: []string{"input_too_big"}, run: caseInputTooBig},
	{name: "abort", gate: always, scripts: []string{"abort"}, run: caseAbort},
	{name: "abort_mid_run", gate: needHardClock, scripts: []string{"abort_mid_run"}, run: caseAbortMidRun},
	{name: "composition", gate: always, scripts: []string{"composition_throw", "composition_output"}, run: caseComposition},
}

// echoInput is the input of echo (and of the echo runs other cases make).
var echoInput = []byte(`{"text":"echo ✓ é","n":7,"list":[1,"two",null,true,false,{"k":[]}],"empty":{}}`)

func caseEcho(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	got, err := e.eval(ctx, ev, "echo", echoInput, e.k.limits)
	if err != nil {
		e.failf("the result must be the input, got %s", describe(nil, err))
		return
	}
	if diff := jsonDiff(echoInput, got); diff != "" {
		e.failf("the result must equal the input: %s", diff)
	}
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

func caseRunawayLoop(ctx context.Context, e *env) {
	limits := spi.Limits{WallClock: RunawayWallClock, MemoryBytes: e.k.limits.MemoryBytes}
	ev, ok := e.setup(limits, nil)
	if !ok {
		return
	}
	got, err := e.eval(ctx, ev, "runaway_loop", []byte(`{}`), limits)
	if !isLimit(err, effect.LimitCPU, effect.LimitWallClock) {
		e.failf("a loop that never ends must end in a typed limitExceeded cpu or wallClock, got %s", describe(got, err))
	}
}

func caseRunawayNative(ctx context.Context, e *env) {
	limits := spi.Limits{WallClock: RunawayWallClock, MemoryBytes: e.k.limits.MemoryBytes}
	ev, ok := e.setup(limits, nil)
	if !ok {
		return
	}
	// A warm-up run on the same instance, so that the timing below is not
	// charged with an engine's cold start.
	if got, err := e.eval(ctx, ev, "echo", echoInput, limits); err != nil {
		e.failf("the warm-up echo on this instance failed: %s", describe(got, err))
		return
	}
	kinds := []effect.LimitKind{effect.LimitWallClock, effect.LimitMemory}
	if e.k.caps.CPU {
		kinds = append(kinds, effect.LimitCPU)
	}
	start := time.Now()
	got, err := e.eval(ctx, ev, "runaway_native", []byte(`{}`), limits)
	took := time.Since(start)
	if !isLimit(err, kinds...) {
		e.failf("one long native operation must end in a typed limit (%s), got %s", kindNames(kinds), describe(got, err))
		return
	}
	if took > RunawayWallClock+NativeGrace {
		e.failf("the typed limit arrived after %v, past the wall clock %v plus the grace %v", took.Round(time.Millisecond), RunawayWallClock, NativeGrace)
		return
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
	if !isLimit(err, effect.LimitMemory) {
		e.failf("an allocation bomb must end in a typed limitExceeded memory, got %s", describe(got, err))
	}
	if growth > bound {
		e.failf("host memory (%s) grew by %s during the bomb, past the bound %s (4 × the memory limit + 64 MiB)", how, mib(growth), mib(bound))
		return
	}
	e.passf("host memory (%s) grew by %s (bound %s)", how, mib(growth), mib(bound))
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
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("canary"))
	}))
	defer canary.Close()

	input, _ := json.Marshal(map[string]string{"url": canary.URL + "/sandbank-canary"})
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
			strings.Contains(f.Message, canary.Listener.Addr().String()) {
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
	if !bytes.Equal(clock, []byte("null")) {
		var ms float64
		if jerr := json.Unmarshal(clock, &ms); jerr != nil {
			e.failf(`the escape probe's "clock" must be a number or null, got %s`, clip(string(clock)))
			return
		}
		seen := time.UnixMilli(int64(ms))
		if d := now.Sub(seen); d < 24*time.Hour && d > -24*time.Hour {
			e.failf("the script's clock reads %s, within 24 h of the host clock (%s): the host clock leaked", seen.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
	}
}

func caseFreshPerRun(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, nil)
	if !ok {
		return
	}
	check := func(batch string, i, n int, got []byte, err error) {
		if err != nil {
			e.failf("%s run %d of %d must answer {\"runs\":1}, got %s", batch, i, n, describe(got, err))
			return
		}
		var r struct {
			Runs *json.Number `json:"runs"`
		}
		d := json.NewDecoder(bytes.NewReader(got))
		d.UseNumber()
		if d.Decode(&r) != nil || r.Runs == nil {
			e.failf(`%s run %d of %d must answer {"runs": COUNT}, got %s`, batch, i, n, clip(string(got)))
			return
		}
		if r.Runs.String() != "1" {
			e.failf("%s run %d of %d saw state from an earlier run: %s", batch, i, n, clip(string(got)))
		}
	}
	for i := 1; i <= FreshSequential; i++ {
		got, err := e.eval(ctx, ev, "fresh_per_run", []byte(`{}`), e.k.limits)
		check("sequential", i, FreshSequential, got, err)
	}
	var wg sync.WaitGroup
	for i := 1; i <= FreshConcurrent; i++ {
		wg.Go(func() {
			got, err := e.eval(ctx, ev, "fresh_per_run", []byte(`{}`), e.k.limits)
			check("concurrent", i, FreshConcurrent, got, err)
		})
	}
	wg.Wait()
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
	limits := spi.Limits{WallClock: CPUBudgetWallClock, MemoryBytes: e.k.limits.MemoryBytes}
	ev, ok := e.effectFor(b, limits, nil)
	if !ok {
		return
	}
	got, err := e.eval(ctx, ev, "cpu_budget", []byte(`{}`), limits)
	if !isLimit(err, effect.LimitCPU) {
		e.failf("a loop under a small CPU budget (wall clock %v) must end in a typed limitExceeded cpu, got %s", CPUBudgetWallClock, describe(got, err))
	}
}

// bigInput is input_too_big's input: "[0,0,…,0]", InputTooBigBytes long.
func bigInput() []byte {
	n := (InputTooBigBytes - 1) / 2
	b := make([]byte, 0, 2*n+1)
	b = append(b, '[')
	b = append(b, bytes.Repeat([]byte("0,"), n-1)...)
	return append(b, "0]"...)
}

func caseInputTooBig(ctx context.Context, e *env) {
	limits := spi.Limits{WallClock: e.k.limits.WallClock, MemoryBytes: InputTooBigMemoryBytes}
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
		e.failf("a %d-byte input that cannot be parsed within %d bytes of memory must end in a typed inputTooLarge, got %s", len(in), InputTooBigMemoryBytes, describe(got, err))
	case f.Limit != InputTooBigMemoryBytes:
		e.failf("the inputTooLarge must come from the backend at the memory limit %d, got one with limit %d", InputTooBigMemoryBytes, f.Limit)
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
	limits := spi.Limits{WallClock: AbortWallClock, MemoryBytes: e.k.limits.MemoryBytes}
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
	settle := time.NewTimer(AbortSettle)
	defer settle.Stop()
	select {
	case <-sp.returned:
		// The backend finished a loop that never ends, before any
		// cancellation.
		select {
		case r := <-done:
			hint := ""
			if isLimit(r.err, effect.LimitCPU) {
				hint = fmt.Sprintf(" (the main factory's CPU budget must outlast %v; give cpu_budget its small budget through Options.CPUBudget)", AbortSettle)
			}
			e.failf("the run ended before it could be cancelled: %s%s", describe(r.got, r.err), hint)
		case <-waitCtx.Done():
			e.failf("the run ended before it could be cancelled, and the effect did not return")
		}
		return
	case <-settle.C:
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || r.got != nil {
			e.failf("a run cancelled after the backend was called must yield context.Canceled, got %s", describe(r.got, r.err))
		}
	case <-waitCtx.Done():
		e.failf("the effect did not return after the cancellation")
		return
	}
	select {
	case <-sp.returned:
	case <-waitCtx.Done():
		e.failf("the backend's own Evaluate had not returned %v after the cancellation: a WallClock hard backend must stop when ctx is done", (e.k.watchdog * 3 / 4).Round(time.Millisecond))
	}
}

func caseComposition(ctx context.Context, e *env) {
	ev, ok := e.setup(e.k.limits, func(o *effect.Options) { o.MaxOutputBytes = CompositionMaxOutputBytes })
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
			if n := utf16Units(field.text); n > effect.MaxTextUnits+MarkerAllowance {
				e.failf("the scriptError %s is %d UTF-16 units, past the bound %d plus a marker", field.name, n, effect.MaxTextUnits)
			}
		}
		if f.Message == "" {
			e.failf("the scriptError message is empty: the bounded text must keep the start of the thrown message")
		}
	}
	got, err = e.eval(ctx, ev, "composition_output", []byte(`{}`), e.k.limits)
	if !isLimit(err, effect.LimitOutput) {
		e.failf("an output past MaxOutputBytes (%d) must end in a typed limitExceeded output, got %s", CompositionMaxOutputBytes, describe(got, err))
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
