package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/fixtures/javascript"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// The kit's defaults and fixed figures. They are the kit's own, not API:
// the package doc says what the kit asks of a backend, and a report's
// figures carry each bound they were held to.
const (
	// defaultWatchdog bounds one case; a case still running after it fails
	// with "watchdog: case did not finish within …".
	defaultWatchdog = 30 * time.Second
	// defaultWallClock is the wall clock of ordinary cases when
	// Options.Limits.WallClock is zero.
	defaultWallClock = 5 * time.Second
	// defaultMemoryBytes is the memory limit of every case but
	// input_too_big when Options.Limits.MemoryBytes is zero (32 MiB, the
	// effect's default).
	defaultMemoryBytes = effect.DefaultMemoryBytes

	// runawayWallClock is the wall clock of runaway_loop and runaway_native,
	// short so that a matrix run is quick.
	runawayWallClock = 250 * time.Millisecond
	// nativeGrace is how far past runawayWallClock the typed limit of
	// runaway_native may arrive. It is the only timing the kit asserts.
	nativeGrace = time.Second
	// cpuBudgetWallClock is the wall clock of cpu_budget: long, so that only
	// the CPU budget can stop the loop in time.
	cpuBudgetWallClock = 10 * time.Second
	// abortWallClock is the wall clock of abort_mid_run: long, so that only
	// the cancellation can stop the loop in time.
	abortWallClock = 30 * time.Second
	// abortSettle is how long abort_mid_run lets the loop run after the
	// backend was entered before it cancels: a backend that returns within
	// it fails the case (the loop never ends on its own).
	abortSettle = 100 * time.Millisecond
	// inputTooBigMemoryBytes is the memory limit of input_too_big (16 MiB).
	inputTooBigMemoryBytes int64 = 16 << 20
	// inputTooBigBytes is the size of input_too_big's input, JSON text
	// "[0,0,0,…]": under the effect's byte ceiling, far more than
	// inputTooBigMemoryBytes once parsed into any engine's values.
	inputTooBigBytes = 12_000_000
	// compositionMaxOutputBytes is the effect's output ceiling in
	// composition (1 MiB); composition_output returns about 2 MB.
	compositionMaxOutputBytes int64 = 1 << 20
	// markerAllowance is how many UTF-16 units past effect.MaxTextUnits a
	// bounded message may run, for the effect's truncation marker.
	markerAllowance = 32
	// freshSequential and freshConcurrent are fresh_per_run's batches.
	freshSequential = 16
	freshConcurrent = 8

	// defaultStopGrace is how long after its deadline (the wall clock, or
	// the cancellation) a backend's own Evaluate may return when it
	// declares WallClock hard, unless Options.StopGrace says otherwise. It
	// is four times runawayWallClock, so a backend that stops 3 s late
	// fails while a loaded 2-core machine's scheduling delay does not.
	defaultStopGrace = nativeGrace
	// defaultIdleWait bounds how long the kit waits, after a case ended in
	// a limit or a cancellation, for the process's CPU use to fall to idle
	// (Options.IdleWait). See idleWindow. An honest engine is idle within
	// a few windows, so the wait costs nothing then; it is long so that
	// what else a loaded process finishes meanwhile (a garbage collection
	// of a large heap under -race, a compile another test left running)
	// cannot fail an honest engine, while an engine that keeps running
	// never falls to idle however long the kit waits.
	defaultIdleWait = 10 * time.Second
	// idleWindow, idleSpan and idleShare define idle: idleSpan
	// consecutive windows of idleWindow in which the whole process used at
	// most idleShare of one core together (user plus system CPU time from
	// getrusage). The kit measures windows until the process is idle or
	// the idle wait passed. A script still running after its limit uses a
	// share of a core over any three windows (about half of one on a
	// 2-core machine at load 4, a fifth at load 10, though a single window
	// may see none of it); an idle process next to nothing (0.1 %
	// measured), whatever the load of the other core.
	idleWindow = 100 * time.Millisecond
	idleSpan   = 3
	idleShare  = 0.05
	// hardIdleSettle is how long past a hard deadline plus the stop grace
	// an engine may take to wind down (its clean-up, a garbage
	// collection) before the process must be idle. A native operation
	// that runs on for seconds after its deadline cannot hide in it.
	hardIdleSettle = time.Second
	// defaultWarmTimeout bounds a backend's Warm (Options.WarmTimeout); the
	// warm case also calls Warm with a context that ends after warmDeadline
	// and requires it to return within warmDeadline plus the stop grace.
	defaultWarmTimeout = 30 * time.Second
	warmDeadline       = 50 * time.Millisecond
	// defaultCloseTimeout bounds each backend's Close (Options.CloseTimeout):
	// a Close still running after it fails the case instead of hanging the
	// kit.
	defaultCloseTimeout = 10 * time.Second
	// cpuBudgetStop is how long the small-budget backend may take to stop
	// cpu_budget's loop, its own start-up on that run included: half of
	// cpuBudgetWallClock, so that a wall clock relabelled "cpu" fails,
	// while a real budget (quickjs-wasmtime measured 960 ms at load 11,
	// most of it the run's instantiation) has a fivefold margin.
	cpuBudgetStop = cpuBudgetWallClock / 2
)

// Options configure a kit run. A nil *Options means defaults.
type Options struct {
	// Fixtures is the fixture set. Nil means the JavaScript set
	// (fixtures/javascript) for a backend whose language is "javascript";
	// for any other language nil is a refusal. A set whose Language differs
	// from the backend's is a refusal.
	Fixtures *fixtures.Set
	// Effect is the base effect options. For every case the kit sets
	// AllowNetwork exactly when the backend declares a network other than
	// none, AllowReusedEnvironment exactly when it declares FreshPerRun
	// false, and Limits to the case's limits; composition also sets
	// MaxOutputBytes and input_too_big raises MaxInputBytes to fit its
	// input. Everything else (BackendGrace, …) is used as given.
	Effect effect.Options
	// Limits are the limits of ordinary cases. A zero WallClock means
	// 5 s; a zero MemoryBytes means 32 MiB (effect.DefaultMemoryBytes). The
	// runaway, cpu_budget, abort_mid_run and input_too_big cases set their
	// own wall clock (and input_too_big its own memory limit).
	Limits spi.Limits
	// CPUBudget optionally makes the same backend configured with a SMALL
	// CPU budget; cpu_budget runs on it. Nil means the main factory. The
	// main factory's own budget must outlast 100 ms, or abort_mid_run's
	// loop ends before it can be cancelled.
	CPUBudget spi.Factory
	// Watchdog bounds each case. Zero means 30 s.
	Watchdog time.Duration
	// Progress, if set, is called before each case with its name, its
	// 1-based index and the number of cases to run.
	Progress func(caseName string, index, total int)
	// Cases optionally selects a subset, run in CaseNames order. Nil means
	// every case; an unknown name is a refusal.
	Cases []string
	// StopGrace is how long past its deadline a WallClock hard backend's
	// Evaluate may return. Zero means 1 s.
	StopGrace time.Duration
	// IdleWait bounds the wait for CPU to fall to idle after a limit or a
	// cancellation. Zero means 10 s.
	IdleWait time.Duration
	// WarmTimeout bounds Warm. Zero means 30 s.
	WarmTimeout time.Duration
	// CloseTimeout bounds each Close. Zero means 10 s.
	CloseTimeout time.Duration
	// HostObjects lists the names beyond the language's standard set that
	// the backend documents as provided to scripts (a discarding console,
	// say), in addition to those the backend itself declares as an
	// spi.HostObjectDeclarer, as host_objects reports them: a path ("console.log"), or a
	// prefix ending in ".*" ("console.*") for a name and everything under
	// it. host_objects fails every other name outside the standard set and
	// records the declared ones it saw in its evidence.
	HostObjects []string
	// FakeClock, when set, overrides the fixture set's Clock: the fake
	// clock's start in milliseconds since the Unix epoch, for a backend that
	// documents another fake clock than its language's set.
	FakeClock *int64
}

// CaseNames returns every case, in run order.
func CaseNames() []string {
	out := make([]string, len(allCases))
	for i, c := range allCases {
		out[i] = c.name
	}
	return out
}

// Check runs the kit against the backends factory makes and returns the
// report. The factory is called once up front (to read the declaration the
// gates use) and then once per case, so cases never share an instance; the
// kit closes every backend it made (when it is an io.Closer) as its case
// ends.
//
// Every case runs through package effect, so it proves the composition a
// user deploys. A case gated by a capability the backend does not declare
// is skipped with the reason. A case that does not finish within the
// watchdog fails; the kit cannot stop a goroutine, so a hung backend's
// goroutine is left behind (its backend is closed, which may release it).
//
// The error is a refusal, and then there is no report: a nil factory, a
// factory that fails or returns nil, an invalid declaration, no fixture set
// for the backend's language, a set for another language, an unknown case
// name. If ctx is done the run stops and the report so far is returned with
// ctx's error.
func Check(ctx context.Context, factory spi.Factory, opts *Options) (*Report, error) {
	s, err := Prepare(factory, opts)
	if err != nil {
		return nil, err
	}
	for _, name := range s.Cases() {
		if err := ctx.Err(); err != nil {
			return s.Report(), fmt.Errorf("conformance: run stopped: %w", err)
		}
		s.Run(ctx, name)
	}
	return s.Report(), nil
}

// A Suite is a prepared run of the kit: the backend's declaration read,
// the fixture set and the cases chosen, no case run yet. [Check] runs its
// cases in turn; package conformancetest runs each in a subtest of its own.
// A Suite is not safe for concurrent use: run its cases one at a time.
type Suite struct {
	k   *kit
	rep *Report
}

// Prepare readies a run of the kit: it validates opts, makes one backend
// to read its declaration (and closes it), and chooses the cases. It runs
// none. Its error is a refusal, as [Check]'s.
//
// When the probe backend's Close did not return, the report starts with a
// failed result named "probe".
func Prepare(factory spi.Factory, opts *Options) (*Suite, error) {
	k, err := prepare(factory, opts)
	if err != nil {
		return nil, err
	}
	return &Suite{k: k, rep: k.report()}, nil
}

// Cases returns the names of the suite's cases, in run order.
func (s *Suite) Cases() []string {
	out := make([]string, len(s.k.cases))
	for i, c := range s.k.cases {
		out[i] = c.name
	}
	return out
}

// Run runs the named case under the watchdog (calling Options.Progress
// first), adds its result to the report and returns it. ctx ending fails
// the case. A name that is not one of [Suite.Cases] is a failed result,
// and so is a case run twice: each case makes its own backends and runs
// once.
func (s *Suite) Run(ctx context.Context, name string) CaseResult {
	i := slices.IndexFunc(s.k.cases, func(c *caseDef) bool { return c.name == name })
	var res CaseResult
	switch {
	case i < 0:
		res = CaseResult{Name: name, Status: StatusFail, Reason: fmt.Sprintf("conformance: case %q is not in the suite", name)}
	case slices.ContainsFunc(s.rep.Cases, func(r CaseResult) bool { return r.Name == name }):
		res = CaseResult{Name: name, Status: StatusFail, Reason: fmt.Sprintf("conformance: case %q was already run", name)}
	default:
		if s.k.opts.Progress != nil {
			s.k.opts.Progress(name, i+1, len(s.k.cases))
		}
		res = s.k.runCase(ctx, s.k.cases[i])
	}
	s.rep.Cases = append(s.rep.Cases, res)
	return res
}

// Report returns the report of the cases run so far, with the proofs they
// give. It is the same report each time, grown by every [Suite.Run].
func (s *Suite) Report() *Report {
	s.rep.Proofs = proofs(s.k.caps, s.rep.Cases)
	return s.rep
}

// kit is one prepared run.
type kit struct {
	factory  spi.Factory
	cpu      spi.Factory
	set      fixtures.Set
	caps     spi.Capabilities
	opts     Options
	limits   spi.Limits
	watchdog time.Duration
	grace    time.Duration // StopGrace
	idleWait time.Duration
	warmMax  time.Duration
	closeMax time.Duration
	// probeClose is why the probe backend failed (its Close did not
	// return), or "".
	probeClose string
	clock      *int64 // the expected fake clock; nil: no clock
	cases      []*caseDef
	newEval    func(effect.ScriptReader, spi.Backend, *effect.Options) (evaluator, error)
}

func prepare(factory spi.Factory, opts *Options) (*kit, error) {
	if factory == nil {
		return nil, errors.New("conformance: nil factory")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	k := &kit{factory: factory, cpu: o.CPUBudget, opts: o, limits: o.Limits, watchdog: o.Watchdog, newEval: newEvaluator}
	if k.cpu == nil {
		k.cpu = factory
	}
	if k.limits.WallClock < 0 || k.limits.MemoryBytes < 0 || k.watchdog < 0 ||
		o.StopGrace < 0 || o.IdleWait < 0 || o.WarmTimeout < 0 || o.CloseTimeout < 0 {
		return nil, errors.New("conformance: negative limit, watchdog or bound")
	}
	k.grace = cmp.Or(o.StopGrace, defaultStopGrace)
	k.idleWait = cmp.Or(o.IdleWait, defaultIdleWait)
	k.warmMax = cmp.Or(o.WarmTimeout, defaultWarmTimeout)
	k.closeMax = cmp.Or(o.CloseTimeout, defaultCloseTimeout)
	if k.limits.WallClock == 0 {
		k.limits.WallClock = defaultWallClock
	}
	if k.limits.MemoryBytes == 0 {
		k.limits.MemoryBytes = defaultMemoryBytes
	}
	if k.watchdog == 0 {
		k.watchdog = defaultWatchdog
	}

	caps, hostObjects, probeClose, err := probeCapabilities(factory, k.closeMax)
	if err != nil {
		return nil, err
	}
	k.probeClose = probeClose
	k.caps = caps
	k.opts.HostObjects = append(slices.Clip(k.opts.HostObjects), hostObjects...)

	switch {
	case o.Fixtures != nil:
		k.set = *o.Fixtures
		if k.set.FS == nil {
			return nil, errors.New("conformance: Options.Fixtures has no file system")
		}
		if k.set.Language != caps.Language {
			return nil, fmt.Errorf("conformance: the fixture set is for language %q but the backend declares %q", k.set.Language, caps.Language)
		}
	case caps.Language == "javascript":
		k.set = javascript.Set()
	default:
		return nil, fmt.Errorf("conformance: no fixtures for language %q; pass Options.Fixtures", caps.Language)
	}

	k.clock = k.set.Clock
	if o.FakeClock != nil {
		k.clock = o.FakeClock
	}

	if o.Cases == nil {
		k.cases = allCases
	} else {
		for _, name := range o.Cases {
			if !slices.ContainsFunc(allCases, func(c *caseDef) bool { return c.name == name }) {
				return nil, fmt.Errorf("conformance: unknown case %q; known cases: %s", name, strings.Join(CaseNames(), ", "))
			}
		}
		for _, c := range allCases {
			if slices.Contains(o.Cases, c.name) {
				k.cases = append(k.cases, c)
			}
		}
	}
	return k, nil
}

// probeCapabilities makes one backend to read its declaration, then closes
// it within closeMax: closeFailure is the reason when its Close did not
// return in time.
func probeCapabilities(factory spi.Factory, closeMax time.Duration) (caps spi.Capabilities, hostObjects []string, closeFailure string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("conformance: factory panicked: %v", r)
		}
	}()
	b, err := factory()
	if err != nil {
		return spi.Capabilities{}, nil, "", fmt.Errorf("conformance: factory failed: %w", err)
	}
	if b == nil {
		return spi.Capabilities{}, nil, "", errors.New("conformance: factory returned a nil backend")
	}
	if c, ok := b.(io.Closer); ok {
		// A Close that hangs must not hang the kit: it is left running
		// after closeMax, and fails the report's probe result.
		defer func() { closeFailure = closeWithin(c, closeMax) }()
	}
	caps = b.Capabilities()
	if err := caps.Validate(); err != nil {
		return spi.Capabilities{}, nil, "", fmt.Errorf("conformance: the backend declares invalid capabilities: %w", err)
	}
	if d, ok := b.(spi.HostObjectDeclarer); ok {
		hostObjects = slices.Clone(d.HostObjects())
	}
	return caps, hostObjects, "", nil
}

// probeName names the result of the backend the declaration was read
// from, in a report where it failed.
const probeName = "probe"

// report starts the report: with the probe's failed result first, when the
// probe backend's Close did not return.
func (k *kit) report() *Report {
	rep := &Report{Language: k.caps.Language, Capabilities: k.caps, Cases: make([]CaseResult, 0, len(k.cases)+1)}
	if k.probeClose != "" {
		rep.Cases = append(rep.Cases, CaseResult{Name: probeName, Status: StatusFail, Reason: probeName + ": " + k.probeClose})
	}
	return rep
}

// runCase runs one case under the watchdog, then closes every backend the
// case made, each within the close timeout.
func (k *kit) runCase(ctx context.Context, c *caseDef) CaseResult {
	start := time.Now()
	res := CaseResult{Name: c.name}
	if reason := c.gate(k.caps); reason != "" {
		res.Status, res.Reason = StatusSkip, reason
		return res
	}
	if reason, ok := k.declaredInapplicable(c); ok {
		res.Status, res.Reason = StatusSkip, reason
		return res
	}
	e := newEnv(k, c.name)
	caseCtx, cancel := context.WithTimeout(ctx, k.watchdog)
	defer cancel()

	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				e.failf("the case panicked: %v", r)
			}
		}()
		if !e.checkScripts(c.scripts) {
			return
		}
		c.run(caseCtx, e)
	}()

	var timedOut bool
	select {
	case <-done:
		timedOut = errors.Is(caseCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	case <-caseCtx.Done():
		timedOut = ctx.Err() == nil
	}
	e.closeAll()
	fails, pass, figures := e.finish()
	e.mu.Lock()
	skip := e.skip
	e.mu.Unlock()
	res.Duration = time.Since(start)
	res.Evidence = figures
	switch {
	case timedOut:
		res.Status = StatusFail
		res.Reason = fmt.Sprintf("%s: watchdog: case did not finish within %v", c.name, k.watchdog)
		if len(fails) > 0 {
			res.Reason += "; " + strings.Join(fails, "; ")
		}
	case ctx.Err() != nil:
		res.Status = StatusFail
		res.Reason = fmt.Sprintf("%s: the run was cancelled: %v", c.name, ctx.Err())
	case len(fails) > 0:
		res.Status = StatusFail
		res.Reason = strings.Join(fails, "; ")
	case skip != "":
		res.Status = StatusSkip
		res.Reason = skip
	default:
		res.Status = StatusPass
		res.Reason = pass
	}
	return res
}

// env is one case's world: its store, its backends, its findings.
type env struct {
	k     *kit
	name  string
	store *storage.MemoryStore

	mu       sync.Mutex
	fails    []string
	pass     string
	figures  []Figure
	skip     string
	finished bool
	closers  []io.Closer
	closed   bool
}

func newEnv(k *kit, name string) *env {
	return &env{k: k, name: name, store: new(storage.MemoryStore)}
}

// failf records a broken rule. The text is prefixed with the case name.
func (e *env) failf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished {
		return
	}
	e.fails = append(e.fails, e.name+": "+fmt.Sprintf(format, args...))
}

// passf records the note a passing case reports.
func (e *env) passf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pass = fmt.Sprintf(format, args...)
}

// figure records a measurement. A non-empty rule says how value was held
// to bound.
func (e *env) figure(name string, value float64, unit string, rule string, bound float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished {
		return
	}
	e.figures = append(e.figures, Figure{Name: name, Value: value, Unit: unit, Rule: rule, Bound: bound})
}

func (e *env) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.fails) > 0
}

// finish freezes the findings: a goroutine the watchdog left behind can no
// longer change them.
func (e *env) finish() ([]string, string, []Figure) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finished = true
	return slices.Clone(e.fails), e.pass, slices.Clone(e.figures)
}

// closeAll closes every backend the case made, each within the close
// timeout: a Close that does not return in time fails the case (it is left
// running). A backend made afterwards (by a goroutine the watchdog left
// behind) is closed at once, in the background.
func (e *env) closeAll() {
	e.mu.Lock()
	cs := e.closers
	e.closers, e.closed = nil, true
	e.mu.Unlock()
	for _, c := range cs {
		if reason := closeWithin(c, e.k.closeMax); reason != "" {
			e.failf("%s", reason)
		}
	}
}

// checkScripts fails the case when the fixture set lacks one of its
// scripts.
func (e *env) checkScripts(stems []string) bool {
	for _, stem := range stems {
		if _, err := e.k.set.Script(stem); err != nil {
			e.failf("the %s fixture set has no script %s%s (%v)", e.k.set.Language, stem, e.k.set.Ext, err)
			return false
		}
	}
	return true
}

// script stores stem's script varied with a fresh nonce and returns its
// address and the nonce.
func (e *env) script(stem string) (record.Address, string, error) {
	nonce := newNonce()
	b, err := e.k.set.Prepare(stem, nonce)
	if err != nil {
		return "", "", err
	}
	addr, err := e.store.Put(b)
	return addr, nonce, err
}

// backend makes a fresh backend with f and registers it for closing. It
// fails the case when the factory fails or the instance declares something
// other than the instance the gates were read from.
func (e *env) backend(f spi.Factory, which string) (b spi.Backend, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			e.failf("the %s factory panicked: %v", which, r)
			b, ok = nil, false
		}
	}()
	b, err := f()
	if err != nil {
		e.failf("the %s factory failed: %v", which, err)
		return nil, false
	}
	if b == nil {
		e.failf("the %s factory returned a nil backend", which)
		return nil, false
	}
	e.track(b)
	return b, true
}

func (e *env) track(b spi.Backend) {
	c, ok := b.(io.Closer)
	if !ok {
		return
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		go c.Close()
		return
	}
	e.closers = append(e.closers, c)
	e.mu.Unlock()
}

// effectFor wraps b in an effect configured for this case: the base
// options, the opt-ins the declaration needs, and the case's limits as the
// ceiling.
func (e *env) effectFor(b spi.Backend, limits spi.Limits, tweak func(*effect.Options)) (evaluator, bool) {
	caps := b.Capabilities()
	o := e.k.opts.Effect
	o.AllowNetwork = caps.Network != spi.NetworkNone
	o.AllowReusedEnvironment = !caps.FreshPerRun
	o.Limits = limits
	if tweak != nil {
		tweak(&o)
	}
	ev, err := e.k.newEval(e.store, b, &o)
	if err != nil {
		e.failf("effect.New refused the backend: %v", err)
		return nil, false
	}
	return ev, true
}

// setup is the common start of a case: a fresh backend from the main
// factory and an effect over it.
func (e *env) setup(limits spi.Limits, tweak func(*effect.Options)) (evaluator, bool) {
	b, ok := e.mainBackend()
	if !ok {
		return nil, false
	}
	return e.effectFor(b, limits, tweak)
}

// mainBackend makes a fresh backend from the main factory and checks that
// it declares what the gates were read from.
func (e *env) mainBackend() (spi.Backend, bool) {
	b, ok := e.backend(e.k.factory, "main")
	if !ok {
		return nil, false
	}
	if got := b.Capabilities(); got != e.k.caps {
		e.failf("this instance declares %+v, not the %+v the gates were read from", got, e.k.caps)
		return nil, false
	}
	return b, true
}

// eval runs the fixture stem, varied with a fresh nonce, with input (JSON
// text) under limits.
func (e *env) eval(ctx context.Context, ev evaluator, stem string, input []byte, limits spi.Limits) ([]byte, error) {
	got, _, err := e.evalNonce(ctx, ev, stem, input, limits)
	return got, err
}

// evalNonce is eval, also returning the nonce the script was varied with.
func (e *env) evalNonce(ctx context.Context, ev evaluator, stem string, input []byte, limits spi.Limits) ([]byte, string, error) {
	addr, nonce, err := e.script(stem)
	if err != nil {
		e.failf("preparing fixture %s%s: %v", stem, e.k.set.Ext, err)
		return nil, nonce, err
	}
	got, err := ev.Evaluate(ctx, effect.Call{Script: addr, Input: rawJSON(input), Limits: limits})
	return got, nonce, err
}

// evalAt runs the script already stored at addr.
func (e *env) evalAt(ctx context.Context, ev evaluator, addr record.Address, input []byte, limits spi.Limits) ([]byte, error) {
	return ev.Evaluate(ctx, effect.Call{Script: addr, Input: rawJSON(input), Limits: limits})
}

// evaluator is what the kit needs of an effect. It exists so that the
// kit's own tests can put a deliberately broken effect in front of a
// backend and prove that the effect-side assertions can fail.
type evaluator interface {
	Evaluate(ctx context.Context, call effect.Call) ([]byte, error)
}

// effectEvaluator adapts *effect.Effect to evaluator.
type effectEvaluator struct{ e *effect.Effect }

func (a effectEvaluator) Evaluate(ctx context.Context, call effect.Call) ([]byte, error) {
	return a.e.Evaluate(ctx, call)
}

// newEvaluator builds the effect every case runs through. Only the kit's
// tests replace it; a run reads it once, when it starts.
var newEvaluator = func(s effect.ScriptReader, b spi.Backend, o *effect.Options) (evaluator, error) {
	eff, err := effect.New(s, b, o)
	if err != nil {
		return nil, err
	}
	return effectEvaluator{eff}, nil
}

// skipf marks the case skipped with a reason a fixture set declared.
func (e *env) skipf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.skip = fmt.Sprintf(format, args...)
}
