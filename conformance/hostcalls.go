package conformance

// The host-call cases (SPI 1.1), gated by Capabilities.HostCalls. Their
// fixtures pass bytes through, so that a wasm guest needs no JSON parser:
//
//   - host_calls: r1 = host.probe(input); r2 = host.probe(r1); the result
//     is r2.
//   - host_error: try host.fails(input), keeping the error's message M;
//     then host.fails(M), uncaught (a wasm guest passes M's bytes as they
//     are; M is JSON text, so both forms are valid arguments).
//   - host_loop: host.probe(input), forever.
//
// host_stuck runs host_calls with a host function that blocks until the
// kit releases it.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

func init() {
	allCases = append(allCases,
		&caseDef{name: "host_calls", gate: needHostCalls, scripts: []string{"host_calls"}, run: caseHostCalls, proves: []string{"hostCalls"}},
		&caseDef{name: "host_errors", gate: needHostCalls, scripts: []string{"host_error", "host_calls"}, run: caseHostErrors, proves: []string{"hostCalls"}},
		&caseDef{name: "host_limits", gate: needHostCalls, scripts: []string{"host_loop", "host_calls"}, run: caseHostLimits, proves: []string{"hostCalls"}},
		&caseDef{name: "host_stop", gate: needHostCalls, scripts: []string{"host_calls"}, run: caseHostStop, proves: []string{"hostCalls"}},
		&caseDef{name: "host_stuck", gate: needHostCalls, scripts: []string{"host_calls"}, run: caseHostStuck, proves: []string{"hostCalls"}},
		&caseDef{name: "host_isolation", gate: needHostCalls, scripts: []string{"host_calls"}, run: caseHostIsolation, proves: []string{"hostCalls"}},
		// host_clock and host_exact prove no single capability: the
		// first's gate is two (a skip would leave either unproven), the
		// second's set may declare it inapplicable.
		&caseDef{name: "host_clock", gate: needHostCallsHardClock, scripts: []string{"host_clock"}, run: caseHostClock},
		&caseDef{name: "host_exact", gate: needHostCalls, scripts: []string{"host_calls"}, run: caseHostExact, declarable: true},
	)
}

func needHostCalls(c spi.Capabilities) string {
	if c.HostCalls {
		return ""
	}
	return "gated by HostCalls: the backend does not declare host calls"
}

func needHostCallsHardClock(c spi.Capabilities) string {
	if r := needHostCalls(c); r != "" {
		return r
	}
	return needHardClock(c)
}

// The host cases' figures.
const (
	// hostLoopCalls is host_limits' MaxHostCalls: host_loop's call past it
	// ends the run.
	hostLoopCalls = 5
	// hostArgBound is host_limits' MaxHostArgBytes, and hostResultBound
	// its MaxHostResultBytes, for the oversized runs.
	hostArgBound    = 256
	hostResultBound = 256
	// hostStuckRuns is host_stuck's MaxAbandoned: that many runs stuck in
	// a host function fill the cap.
	hostStuckRuns = 2
	// hostStuckWait bounds how long host_stuck waits, once it released
	// its host functions, for the effect to admit calls again.
	hostStuckWait = 30 * time.Second
	// hostLateWait is how long a host case waits, once its runs are over,
	// for a host call the backend makes after its run ended.
	hostLateWait = 100 * time.Millisecond
)

// hostRich is what the probe adds to every answer: text beyond the BMP,
// the largest exact integers of a double, nesting.
const hostRich = `{"text":"host ✓ é 中文 😀 𝄞","maxSafe":9007199254740991,"minSafe":-9007199254740991,"fraction":3.25,"literals":[true,false,null],"nested":[{"a":[{"b":[[],{}]}]}]}`

// hostSpy wraps a backend and each run's broker, counting host calls the
// backend makes after its Evaluate returned (the effect refuses them; the
// kit fails them).
type hostSpy struct {
	spi.Backend
	late atomic.Int64
}

func (s *hostSpy) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if req.Host == nil {
		return s.Backend.Evaluate(ctx, req)
	}
	h := &spyHost{inner: req.Host, spy: s}
	req.Host = h
	if hs, ok := h.inner.(spi.HostStarter); ok {
		st := &spyStarter{spyHost: spyHost{inner: hs, spy: s}, starter: hs}
		req.Host = st
		h = &st.spyHost
	}
	defer h.returned.Store(true)
	return s.Backend.Evaluate(ctx, req)
}

type spyHost struct {
	inner    spi.Host
	spy      *hostSpy
	returned atomic.Bool
}

func (h *spyHost) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if h.returned.Load() {
		h.spy.late.Add(1)
	}
	return h.inner.Call(ctx, name, args)
}

// spyStarter is a spyHost over a broker that starts calls
// (spi.HostStarter), so the backend under test sees the broker's
// concurrency.
type spyStarter struct {
	spyHost
	starter spi.HostStarter
}

func (h *spyStarter) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) {
	if h.returned.Load() {
		h.spy.late.Add(1)
	}
	h.starter.Start(ctx, name, args, done)
}

// hostSetup makes the case's backend behind a host spy and an effect with
// tweak.
func (e *env) hostSetup(limits spi.Limits, tweak func(*effect.Options)) (evaluator, *hostSpy, bool) {
	b, ok := e.mainBackend()
	if !ok {
		return nil, nil, false
	}
	s := &hostSpy{Backend: b}
	ev, ok := e.effectFor(s, limits, tweak)
	return ev, s, ok
}

// hostEval runs stem with input and host functions.
func (e *env) hostEval(ctx context.Context, ev evaluator, stem string, input []byte, limits spi.Limits, host effect.HostFuncs) ([]byte, error) {
	addr, _, err := e.script(stem)
	if err != nil {
		e.failf("preparing fixture %s%s: %v", stem, e.k.set.Ext, err)
		return nil, err
	}
	return ev.Evaluate(ctx, effect.Call{Script: addr, Input: rawJSON(input), Limits: limits, Host: host})
}

// checkLate fails the case when the backend called its broker after a run
// ended.
func (e *env) checkLate(s *hostSpy) {
	time.Sleep(hostLateWait)
	if n := s.late.Load(); n > 0 {
		e.failf("the backend made %d host call(s) after its run ended (Evaluate had returned)", n)
	}
	e.figure("lateHostCalls", float64(s.late.Load()), "calls", "==", 0)
}

// probeLog records a probe's calls.
type probeLog struct {
	mu      sync.Mutex
	args    [][]byte
	answers [][]byte
	rich    string // what every answer carries; "": hostRich
}

// probe returns a host function answering {"step", "nonce", "got", "rich"}
// with a fresh nonce per call, so that only a backend that called the
// broker can know the answer.
func (p *probeLog) probe() effect.HostFunc {
	return func(_ context.Context, args json.RawMessage) (any, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		rich := cmp.Or(p.rich, hostRich)
		ans := fmt.Appendf(nil, `{"step":%d,"nonce":%q,"got":%s,"rich":%s}`, len(p.args)+1, newNonce(), args, rich)
		p.args = append(p.args, append([]byte(nil), args...))
		p.answers = append(p.answers, ans)
		return json.RawMessage(ans), nil
	}
}

func (p *probeLog) snapshot() (args, answers [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.args...), append([][]byte(nil), p.answers...)
}

// hostInput is a host case's input: a nonce and rich text.
func hostInput() []byte {
	return fmt.Appendf(nil, `{"nonce":%q,"rich":%s}`, newNonce(), hostRich)
}

// caseHostCalls: two calls arrive in order with exact arguments, and the
// second answer comes back as the result exactly.
func caseHostCalls(ctx context.Context, e *env) { hostRoundTrip(ctx, e, hostRich) }

// hostExact is what host_exact's probe adds to every answer, and its
// input holds: integers past 2^53, which a double rounds, and one past
// 2^64, which no machine integer holds.
const hostExact = `{"pastSafe":9007199254740993,"negPastSafe":-9007199254740995,"past64":18446744073709551617,"huge":-123456789012345678901234567890,"nested":[{"n":9007199254740993}]}`

// caseHostExact: host_calls with integers past 2^53 in the input and in
// every answer: they reach the host function, and come back, exactly
// (declarable: a language whose numbers are doubles cannot hold them).
func caseHostExact(ctx context.Context, e *env) { hostRoundTrip(ctx, e, hostExact) }

// hostRoundTrip runs host_calls with rich in the input and in every
// answer.
func hostRoundTrip(ctx context.Context, e *env, rich string) {
	ev, s, ok := e.hostSetup(e.k.limits, nil)
	if !ok {
		return
	}
	defer e.checkLate(s)
	p := probeLog{rich: rich}
	in := fmt.Appendf(nil, `{"nonce":%q,"rich":%s}`, newNonce(), rich)
	got, err := e.hostEval(ctx, ev, "host_calls", in, e.k.limits, effect.HostFuncs{"probe": p.probe()})
	args, answers := p.snapshot()
	e.figure("hostCalls", float64(len(args)), "calls", "==", 2)
	if err != nil {
		e.failf("two host calls must give the second answer, got %s", describe(got, err))
		return
	}
	if len(args) != 2 {
		e.failf("the script calls host.probe twice; the host function was called %d time(s) (a backend must relay every call to the broker)", len(args))
		return
	}
	if diff := jsonDiff(in, args[0]); diff != "" {
		e.failf("the first call's argument must be the input exactly: %s", diff)
	}
	if diff := jsonDiff(answers[0], args[1]); diff != "" {
		e.failf("the second call's argument must be the first answer exactly (calls in order, results round-trip): %s", diff)
	}
	if diff := jsonDiff(answers[1], got); diff != "" {
		e.failf("the result must be the second answer exactly: %s", diff)
	}
}

// hostErrorText is the first error host_error's fails returns: JSON text
// (a string), so that a guest may pass it back as it is.
func hostErrorText(nonce string) string {
	return `"conformance host error ✓ ` + nonce + `"`
}

// caseHostErrors: a host function's error is catchable with its exact
// text; uncaught it is scriptError with bounded text; an oversized
// argument is refused before the host function runs.
func caseHostErrors(ctx context.Context, e *env) {
	ev, s, ok := e.hostSetup(e.k.limits, func(o *effect.Options) { o.MaxHostArgBytes = hostArgBound })
	if !ok {
		return
	}
	defer e.checkLate(s)
	nonce, second := newNonce(), newNonce()
	long := second + " " + strings.Repeat("✓", 3*effect.MaxTextUnits)
	var mu sync.Mutex
	var seen [][]byte
	fails := func(_ context.Context, args json.RawMessage) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, append([]byte(nil), args...))
		if len(seen) == 1 {
			return nil, errors.New(hostErrorText(nonce))
		}
		return nil, errors.New(long)
	}
	got, err := e.hostEval(ctx, ev, "host_error", []byte(`{"ask":1}`), e.k.limits, effect.HostFuncs{"fails": fails})
	mu.Lock()
	calls := append([][]byte(nil), seen...)
	mu.Unlock()
	f, typed := asFailure(err)
	switch {
	case len(calls) != 2:
		e.failf("host_error calls host.fails twice; the host function was called %d time(s)", len(calls))
		return
	case !sameText(calls[1], hostErrorText(nonce)):
		e.failf("the caught error's message must be the host error's text %s exactly; the script passed back %s", hostErrorText(nonce), clip(string(calls[1])))
	case !typed || f.Code != record.CodeScriptError:
		e.failf("an uncaught host error must end in a typed scriptError, got %s", describe(got, err))
		return
	case !strings.Contains(f.Message, second):
		e.failf("the scriptError must carry the host error's text, got %q", clip(f.Message))
	}
	if typed {
		units := len(utf16.Encode([]rune(f.Message)))
		e.figure("uncaughtMessageUnits", float64(units), "units", "<=", effect.MaxTextUnits+markerAllowance)
		if units > effect.MaxTextUnits+markerAllowance {
			e.failf("the uncaught host error's text is %d UTF-16 units, over the bound %d", units, effect.MaxTextUnits+markerAllowance)
		}
	}

	// An argument over MaxHostArgBytes never reaches the host function.
	var p probeLog
	big := fmt.Appendf(nil, `{"pad":%q}`, strings.Repeat("a", 2*hostArgBound))
	got, err = e.hostEval(ctx, ev, "host_calls", big, e.k.limits, effect.HostFuncs{"probe": p.probe()})
	args, _ := p.snapshot()
	f, typed = asFailure(err)
	switch {
	case len(args) != 0:
		e.failf("an argument over MaxHostArgBytes (%d) must not reach the host function; it was called %d time(s)", hostArgBound, len(args))
	case !typed || f.Code != record.CodeScriptError || !strings.Contains(f.Message, "MaxHostArgBytes"):
		e.failf("an oversized argument must be refused with an error thrown into the script (uncaught: scriptError naming MaxHostArgBytes), got %s", describe(got, err))
	}
}

// sameText reports whether args is text itself, or a JSON string whose
// value is text.
func sameText(args []byte, text string) bool {
	if string(args) == text {
		return true
	}
	var s string
	return json.Unmarshal(args, &s) == nil && s == text
}

// caseHostLimits: the call past MaxHostCalls ends the run with
// limitExceeded (hostCalls) and is not delivered; a result over
// MaxHostResultBytes is refused with an error thrown into the script.
func caseHostLimits(ctx context.Context, e *env) {
	ev, s, ok := e.hostSetup(e.k.limits, func(o *effect.Options) {
		o.MaxHostCalls = hostLoopCalls
		o.MaxHostResultBytes = hostResultBound
	})
	if !ok {
		return
	}
	defer e.checkLate(s)
	var n atomic.Int64
	small := func(context.Context, json.RawMessage) (any, error) { n.Add(1); return 1, nil }
	got, err := e.hostEval(ctx, ev, "host_loop", hostInput(), e.k.limits, effect.HostFuncs{"probe": small})
	e.figure("callsDelivered", float64(n.Load()), "calls", "==", hostLoopCalls)
	switch f, typed := asFailure(err); {
	case !typed || f.Code != record.CodeLimitExceeded || f.Kind != record.LimitHostCalls:
		e.failf("a script calling its host forever must end in limitExceeded hostCalls, got %s", describe(got, err))
	case f.Limit != hostLoopCalls:
		e.failf("the hostCalls failure must carry the bound %d, got %d", hostLoopCalls, f.Limit)
	case n.Load() != hostLoopCalls:
		e.failf("exactly MaxHostCalls (%d) calls must be delivered, got %d", hostLoopCalls, n.Load())
	}

	huge := func(context.Context, json.RawMessage) (any, error) {
		return strings.Repeat("z", 2*hostResultBound), nil
	}
	got, err = e.hostEval(ctx, ev, "host_calls", hostInput(), e.k.limits, effect.HostFuncs{"probe": huge})
	if f, typed := asFailure(err); !typed || f.Code != record.CodeScriptError || !strings.Contains(f.Message, "MaxHostResultBytes") {
		e.failf("a result over MaxHostResultBytes must be refused with an error thrown into the script (uncaught: scriptError naming MaxHostResultBytes), got %s", describe(got, err))
	}
}

// caseHostStop: a run blocked in a slow host call is stopped by the wall
// clock (limitExceeded wallClock) and by the caller's cancellation, and the
// host function's context is done both times.
func caseHostStop(ctx context.Context, e *env) {
	ev, s, ok := e.hostSetup(e.k.limits, nil)
	if !ok {
		return
	}
	defer e.checkLate(s)
	slow := func(entered chan<- struct{}, done chan<- struct{}) effect.HostFunc {
		var once sync.Once
		return func(hctx context.Context, _ json.RawMessage) (any, error) {
			once.Do(func() { close(entered) })
			<-hctx.Done()
			close(done)
			return nil, hctx.Err()
		}
	}
	waitDone := func(what string, done <-chan struct{}) {
		select {
		case <-done:
		case <-time.After(e.k.grace):
			e.failf("%s: the host function's context was not done within %v of the run's end", what, e.k.grace)
		case <-ctx.Done():
		}
	}

	// The wall clock counts from when the backend is called, so an engine
	// that boots inside the run (a fresh instance, on a loaded machine) may
	// spend a short clock before the script makes its call: then the kit
	// tries again with a clock four times as long, up to twice.
	wall := runawayWallClock
	for attempt := 0; ; attempt++ {
		limits := spi.Limits{WallClock: wall, MemoryBytes: e.k.limits.MemoryBytes}
		entered, done := make(chan struct{}), make(chan struct{})
		start := time.Now()
		got, err := e.hostEval(ctx, ev, "host_calls", hostInput(), limits, effect.HostFuncs{"probe": slow(entered, done)})
		took := time.Since(start)
		select {
		case <-entered:
		default:
			if attempt < 2 && isLimit(err, record.LimitWallClock) {
				wall *= 4
				continue
			}
			e.failf("the host function was never called within the wall clock %v (a backend must relay every call to the broker), got %s", wall, describe(got, err))
			return
		}
		e.figure("wallClockStopMs", ms(took), "ms", "<=", ms(wall+e.k.grace))
		if !isLimit(err, record.LimitWallClock) {
			e.failf("a run blocked in a host call past its wall clock must end in limitExceeded wallClock, got %s", describe(got, err))
		} else if took > wall+e.k.grace {
			e.failf("the run blocked in a host call ended after %v, past the wall clock %v plus the grace %v", took.Round(time.Millisecond), wall, e.k.grace)
		}
		waitDone("wall clock", done)
		break
	}

	entered, done := make(chan struct{}), make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-entered:
			cancel()
		case <-cctx.Done():
		}
	}()
	got, err := e.hostEval(cctx, ev, "host_calls", hostInput(), e.k.limits, effect.HostFuncs{"probe": slow(entered, done)})
	select {
	case <-entered:
	default:
		e.failf("the host function was never called (a backend must relay every call to the broker), got %s", describe(got, err))
		return
	}
	if !errors.Is(err, context.Canceled) {
		e.failf("a run cancelled in a host call must return context.Canceled, got %s", describe(got, err))
	}
	waitDone("cancellation", done)
}

// caseHostStuck: a host function that ignores its context counts in the
// effect's Abandoned until it returns, however the backend stops (stuck
// with it, or returned and left it on a goroutine of its own), so
// MaxAbandoned holds: with hostStuckRuns runs stopped while stuck, one by
// the wall clock and one by the caller, the next call is refused
// (ErrOverloaded, retryable) until the kit releases the functions; then
// calls are admitted again.
func caseHostStuck(ctx context.Context, e *env) {
	b, ok := e.mainBackend()
	if !ok {
		return
	}
	// The spy times the backend's own return: the effect returns at the
	// stop whatever the backend does.
	sp := newSpy(b)
	s := &hostSpy{Backend: sp}
	ev, ok := e.effectFor(s, e.k.limits, func(o *effect.Options) { o.MaxAbandoned = hostStuckRuns })
	if !ok {
		return
	}
	defer e.checkLate(s)
	calls := 0 // the backend calls made so far
	// returnedWithin fails the case unless the backend's own Evaluate of
	// call number calls returned within bound of from.
	returnedWithin := func(figure, what string, from time.Time, bound time.Duration) bool {
		end, returned := sp.waitReturned(calls, bound+e.k.grace)
		took := end.Sub(from)
		if !returned {
			took = time.Since(from)
		}
		e.figure(figure, ms(took), "ms", "<=", ms(bound))
		if !returned || took > bound {
			e.failf("%s, the backend's own Evaluate returned %v later (bound %v): a backend must stop when its run ends, without waiting for a host function that ignores its context", what, took.Round(time.Millisecond), bound)
			return false
		}
		return true
	}
	release := make(chan struct{})
	var freeOnce sync.Once
	free := func() { freeOnce.Do(func() { close(release) }) }
	defer free()
	stuck := func(entered chan<- struct{}) effect.HostFunc {
		var once sync.Once
		return func(context.Context, json.RawMessage) (any, error) {
			once.Do(func() { close(entered) })
			<-release
			return 1, nil
		}
	}
	wasEntered := func(entered <-chan struct{}) bool {
		select {
		case <-entered:
			return true
		default:
			return false
		}
	}

	// Stopped by the wall clock; an engine that boots inside the run may
	// spend a short clock before the call, so the kit tries again with a
	// clock four times as long, up to twice (as in host_stop).
	wall := runawayWallClock
	for attempt := 0; ; attempt++ {
		limits := spi.Limits{WallClock: wall, MemoryBytes: e.k.limits.MemoryBytes}
		entered := make(chan struct{})
		start := time.Now()
		got, err := e.hostEval(ctx, ev, "host_calls", hostInput(), limits, effect.HostFuncs{"probe": stuck(entered)})
		calls++
		if wasEntered(entered) {
			if !isLimit(err, record.LimitWallClock) {
				e.failf("a run stuck in a host call past its wall clock must end in limitExceeded wallClock, got %s", describe(got, err))
			}
			if !returnedWithin("wallClockReturnMs", fmt.Sprintf("stopped by its wall clock %v while stuck in a host call", wall), start, wall+e.k.grace) {
				return
			}
			break
		}
		if attempt < 2 && isLimit(err, record.LimitWallClock) {
			wall *= 4
			continue
		}
		e.failf("the host function was never called within the wall clock %v (a backend must relay every call to the broker), got %s", wall, describe(got, err))
		return
	}

	// Stopped by the caller, once the call is stuck.
	entered := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cancelled := make(chan time.Time, 1)
	go func() {
		select {
		case <-entered:
			cancelled <- time.Now()
			cancel()
		case <-cctx.Done():
		}
	}()
	got, err := e.hostEval(cctx, ev, "host_calls", hostInput(), e.k.limits, effect.HostFuncs{"probe": stuck(entered)})
	calls++
	if !wasEntered(entered) {
		e.failf("the host function was never called (a backend must relay every call to the broker), got %s", describe(got, err))
		return
	}
	if !errors.Is(err, context.Canceled) {
		e.failf("a run cancelled while stuck in a host call must return context.Canceled, got %s", describe(got, err))
	}
	var at time.Time
	select {
	case at = <-cancelled:
	case <-ctx.Done():
		return
	}
	if !returnedWithin("cancelReturnMs", "cancelled while stuck in a host call", at, e.k.grace) {
		return
	}

	// Both runs are still inside their host functions: the next call is
	// refused, retryably, without reaching the backend.
	var p probeLog
	got, err = e.hostEval(ctx, ev, "host_calls", hostInput(), e.k.limits, effect.HostFuncs{"probe": p.probe()})
	if !errors.Is(err, effect.ErrOverloaded) || !effect.Retryable(err) {
		e.failf("with MaxAbandoned (%d) runs stuck in host functions that ignore their context, the next call must be refused with ErrOverloaded (a stuck host function counts as abandoned until it returns), got %s", hostStuckRuns, describe(got, err))
		return
	}

	// Released, the functions return and calls are admitted again.
	free()
	deadline := time.Now().Add(hostStuckWait)
	for {
		got, err = e.hostEval(ctx, ev, "host_calls", hostInput(), e.k.limits, effect.HostFuncs{"probe": p.probe()})
		if !errors.Is(err, effect.ErrOverloaded) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if err != nil {
		e.failf("once the stuck host functions returned, calls must be admitted again (within %v), got %s", hostStuckWait, describe(got, err))
	}
}

// host_isolation's figures: hostIsoRuns runs at once on one backend, each
// first call held until all of them are in a host call, or until
// hostIsoWait passed (a backend may run its runs one at a time).
const (
	hostIsoRuns = 4
	hostIsoWait = 2 * time.Second
)

// caseHostIsolation: runs at once on one backend, each with host
// functions of its own, each get their own answers: every call reaches
// the run's own function with the run's own arguments, and each result is
// the run's own second answer. The first calls are held until every run
// is inside one, so the runs overlap where the backend lets them.
func caseHostIsolation(ctx context.Context, e *env) {
	ev, s, ok := e.hostSetup(e.k.limits, nil)
	if !ok {
		return
	}
	defer e.checkLate(s)
	var (
		arrived atomic.Int64
		most    atomic.Int64
		all     = make(chan struct{})
		allOnce sync.Once
	)
	open := func() { allOnce.Do(func() { close(all) }) }
	timer := time.AfterFunc(hostIsoWait, open)
	defer timer.Stop()
	type run struct {
		p     probeLog
		in    []byte
		first atomic.Bool
		got   []byte
		err   error
	}
	runs := make([]*run, hostIsoRuns)
	var wg sync.WaitGroup
	for i := range runs {
		r := &run{in: hostInput()}
		runs[i] = r
		probe := r.p.probe()
		held := func(hctx context.Context, args json.RawMessage) (any, error) {
			if r.first.CompareAndSwap(false, true) {
				n := arrived.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n == hostIsoRuns {
					open()
				}
				select {
				case <-all:
				case <-hctx.Done():
				}
			}
			return probe(hctx, args)
		}
		wg.Go(func() {
			r.got, r.err = e.hostEval(ctx, ev, "host_calls", r.in, e.k.limits, effect.HostFuncs{"probe": held})
		})
	}
	wg.Wait()
	e.figure("runsAtOnce", float64(most.Load()), "runs", "", 0)
	own := 0
	for i, r := range runs {
		args, answers := r.p.snapshot()
		if r.err != nil {
			e.failf("run %d of %d at once: two host calls must give the run's own second answer, got %s", i+1, hostIsoRuns, describe(r.got, r.err))
			continue
		}
		if len(args) != 2 {
			e.failf("run %d of %d at once: its own host function was called %d time(s), not 2: a run's calls must reach its own host functions, not another run's", i+1, hostIsoRuns, len(args))
			continue
		}
		ok := true
		for _, c := range []struct{ what, diff string }{
			{"its first call's argument must be its own input", jsonDiff(r.in, args[0])},
			{"its second call's argument must be its own first answer", jsonDiff(answers[0], args[1])},
			{"the result must be its own second answer", jsonDiff(answers[1], r.got)},
		} {
			if c.diff != "" {
				e.failf("run %d of %d at once: %s: %s", i+1, hostIsoRuns, c.what, c.diff)
				ok = false
			}
		}
		if ok {
			own++
		}
	}
	e.figure("runsOwnAnswers", float64(own), "runs", "==", hostIsoRuns)
}

// caseHostClock: the wall clock runs while a host call is out. The script
// calls the host once, then loops without end. The host function holds
// the call for half the stop grace from when it is entered, then answers;
// the wall clock is that hold plus room for the script's start (a
// quarter of the stop grace). An honest backend's deadline is at most
// the wall clock after the call was entered (the script started before
// it), so its own Evaluate returns within the wall clock plus a quarter
// of the stop grace of the call's entry; a backend whose clock stood
// still during the call runs on for the whole hold past its deadline,
// twice that tolerance.
//
// The bounds count from the call's entry, not from the backend's call,
// so an engine's start-up (what the stop grace mostly covers elsewhere:
// a fresh instance, under load) is not charged, and the tolerance can be
// a quarter of the stop grace, still ten times a loaded machine's
// scheduling delay; that keeps the case short. An engine that boots
// inside the run may spend the room before the call: then the kit tries
// again with four times the room, up to twice (as host_stop does).
func caseHostClock(ctx context.Context, e *env) {
	hold, tolerance := e.k.grace/2, e.k.grace/4
	b, ok := e.mainBackend()
	if !ok {
		return
	}
	sp := newSpy(b)
	s := &hostSpy{Backend: sp}
	room := e.k.grace / 4
	ev, ok := e.effectFor(s, spi.Limits{WallClock: hold + 16*room, MemoryBytes: e.k.limits.MemoryBytes}, nil)
	if !ok {
		return
	}
	defer e.checkLate(s)
	for attempt := 1; ; attempt++ {
		wall := hold + room
		done, retry := e.hostClockRun(ctx, ev, sp, attempt, wall, hold, tolerance)
		if done || !retry || attempt == 3 {
			if !done {
				e.failf("the script calls host.probe before its loop; under a wall clock of %v the call never reached the host function %v before the deadline (a backend must relay every call to the broker, and not charge its start-up to the wall clock)", wall, hold)
			}
			return
		}
		room *= 4
	}
}

// hostClockRun is one attempt of host_clock, the attempt-th call to the
// backend: done once the call was held for the whole hold and the run's
// stop was checked; retry when the deadline came before the hold ended.
func (e *env) hostClockRun(ctx context.Context, ev evaluator, sp *spy, attempt int, wall, hold, tolerance time.Duration) (done, retry bool) {
	limits := spi.Limits{WallClock: wall, MemoryBytes: e.k.limits.MemoryBytes}
	var (
		p         probeLog
		enteredAt time.Time
		held      atomic.Bool
		once      sync.Once
	)
	probe := p.probe()
	hostFn := func(hctx context.Context, args json.RawMessage) (any, error) {
		once.Do(func() { enteredAt = time.Now() })
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-hctx.Done():
			return nil, hctx.Err()
		}
		held.Store(true)
		return probe(hctx, args)
	}
	got, err := e.hostEval(ctx, ev, "host_clock", hostInput(), limits, effect.HostFuncs{"probe": hostFn})
	end, returned := sp.waitReturned(attempt, wall+e.k.grace+e.k.idleWait)
	kinds := []record.LimitKind{record.LimitWallClock}
	if e.k.caps.CPU {
		kinds = append(kinds, record.LimitCPU)
	}
	if !held.Load() {
		return false, isLimit(err, record.LimitWallClock)
	}
	if !isLimit(err, kinds...) {
		e.failf("a loop after a host call held %v of a %v wall clock must end in a typed limitExceeded %s (the wall clock runs while a host call is out), got %s", hold, wall, kindNames(kinds), describe(got, err))
	}
	took := end.Sub(enteredAt)
	if !returned {
		took = time.Since(enteredAt)
	}
	bound := wall + tolerance
	e.figure("wallClockMs", ms(wall), "ms", "", 0)
	e.figure("stopAfterCall", ms(took), "ms", "<=", ms(bound))
	if !returned || took > bound {
		e.failf("a loop after a host call held %v of a %v wall clock: the backend's own Evaluate returned %v after the call was entered, past the wall clock plus %v (a quarter of the stop grace): the wall clock runs while a host call is out", hold, wall, took.Round(time.Millisecond), tolerance)
	}
	return true, false
}
