package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/fixtures/javascript"
	"github.com/sandbank/sandbank/spi"
)

// Status is the verdict on one case.
type Status string

// The verdicts.
const (
	// StatusPass: the backend, through the effect, did what the case asserts.
	StatusPass Status = "pass"
	// StatusFail: a rule was broken; CaseResult.Reason names it and gives
	// the evidence.
	StatusFail Status = "fail"
	// StatusSkip: the backend does not declare the capability the case
	// checks; CaseResult.Reason names it.
	StatusSkip Status = "skip"
)

// CaseResult is the verdict on one case.
type CaseResult struct {
	// Name is the case, one of CaseNames().
	Name string `json:"name"`
	// Status is the verdict.
	Status Status `json:"status"`
	// Reason explains the verdict. For a failure it names the rule broken
	// and the evidence, prefixed by the case name; for a skip it names the
	// capability that gates the case; for a pass it may carry a figure
	// worth reading (the host RSS growth, the ways the probe tried).
	Reason string `json:"reason,omitempty"`
	// Duration is how long the case took (nanoseconds in JSON).
	Duration time.Duration `json:"durationNs"`
}

// Report is the outcome of a kit run against one backend. Its JSON form,
// json.Marshal(report), is what the command line prints:
//
//	{"language":"javascript",
//	 "capabilities":{"language":"javascript","network":"none","wallClock":"hard",
//	                 "memory":true,"cpu":false,"freshPerRun":true},
//	 "cases":[{"name":"echo","status":"pass","durationNs":1200000}, …]}
type Report struct {
	// Language is the backend's declared language.
	Language string `json:"language"`
	// Capabilities is what the backend declared; the gates were taken from
	// it.
	Capabilities spi.Capabilities `json:"capabilities"`
	// Cases holds one result per case run, in run order.
	Cases []CaseResult `json:"cases"`
}

// Failed reports whether any case failed.
func (r *Report) Failed() bool {
	if r == nil {
		return false
	}
	for _, c := range r.Cases {
		if c.Status == StatusFail {
			return true
		}
	}
	return false
}

// The kit's defaults and fixed figures. They are constants, documented so
// that a backend author knows what the kit asks of the backend.
const (
	// DefaultWatchdog bounds one case; a case still running after it fails
	// with "watchdog: case did not finish within …".
	DefaultWatchdog = 30 * time.Second
	// DefaultWallClock is the wall clock of ordinary cases when
	// Options.Limits.WallClock is zero.
	DefaultWallClock = 5 * time.Second
	// DefaultMemoryBytes is the memory limit of every case but
	// input_too_big when Options.Limits.MemoryBytes is zero (32 MiB, the
	// effect's default).
	DefaultMemoryBytes = effect.DefaultMemoryBytes

	// RunawayWallClock is the wall clock of runaway_loop and runaway_native,
	// short so that a matrix run is quick.
	RunawayWallClock = 250 * time.Millisecond
	// NativeGrace is how far past RunawayWallClock the typed limit of
	// runaway_native may arrive. It is the only timing the kit asserts.
	NativeGrace = time.Second
	// CPUBudgetWallClock is the wall clock of cpu_budget: long, so that only
	// the CPU budget can stop the loop in time.
	CPUBudgetWallClock = 10 * time.Second
	// AbortWallClock is the wall clock of abort_mid_run: long, so that only
	// the cancellation can stop the loop in time.
	AbortWallClock = 30 * time.Second
	// AbortSettle is how long abort_mid_run lets the loop run after the
	// backend was entered before it cancels: a backend that returns within
	// it fails the case (the loop never ends on its own).
	AbortSettle = 100 * time.Millisecond
	// InputTooBigMemoryBytes is the memory limit of input_too_big (16 MiB).
	InputTooBigMemoryBytes int64 = 16 << 20
	// InputTooBigBytes is the size of input_too_big's input, JSON text
	// "[0,0,0,…]": under the effect's byte ceiling, far more than
	// InputTooBigMemoryBytes once parsed into any engine's values.
	InputTooBigBytes = 12_000_000
	// CompositionMaxOutputBytes is the effect's output ceiling in
	// composition (1 MiB); composition_output returns about 2 MB.
	CompositionMaxOutputBytes int64 = 1 << 20
	// MarkerAllowance is how many UTF-16 units past effect.MaxTextUnits a
	// bounded message may run, for the effect's truncation marker.
	MarkerAllowance = 32
	// FreshSequential and FreshConcurrent are fresh_per_run's batches.
	FreshSequential = 16
	FreshConcurrent = 8
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
	// DefaultWallClock; a zero MemoryBytes means DefaultMemoryBytes. The
	// runaway, cpu_budget, abort_mid_run and input_too_big cases set their
	// own wall clock (and input_too_big its own memory limit).
	Limits spi.Limits
	// CPUBudget optionally makes the same backend configured with a SMALL
	// CPU budget; cpu_budget runs on it. Nil means the main factory. The
	// main factory's own budget must outlast AbortSettle, or abort_mid_run's
	// loop ends before it can be cancelled.
	CPUBudget spi.Factory
	// Watchdog bounds each case. Zero means DefaultWatchdog.
	Watchdog time.Duration
	// Progress, if set, is called before each case with its name, its
	// 1-based index and the number of cases to run.
	Progress func(caseName string, index, total int)
	// Cases optionally selects a subset, run in CaseNames order. Nil means
	// every case; an unknown name is a refusal.
	Cases []string
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
	k, err := prepare(factory, opts)
	if err != nil {
		return nil, err
	}
	rep := k.report()
	for i, c := range k.cases {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("conformance: run stopped: %w", err)
		}
		if k.opts.Progress != nil {
			k.opts.Progress(c.name, i+1, len(k.cases))
		}
		res, env := k.runCase(ctx, c)
		if env != nil {
			env.close()
		}
		rep.Cases = append(rep.Cases, res)
	}
	return rep, nil
}

// Run runs the kit from a test: one subtest per case (t.Run(case)), a
// testify assertion per failure, t.Skip with the reason for a gated case,
// and t.Cleanup closing the case's backends. A refusal fails t at once with
// its message. It returns the report.
func Run(t *testing.T, factory spi.Factory, opts *Options) *Report {
	t.Helper()
	k, err := prepare(factory, opts)
	if err != nil {
		t.Fatal(err.Error())
		return nil
	}
	rep := k.report()
	for i, c := range k.cases {
		if k.opts.Progress != nil {
			k.opts.Progress(c.name, i+1, len(k.cases))
		}
		t.Run(c.name, func(t *testing.T) {
			res, env := k.runCase(t.Context(), c)
			if env != nil {
				t.Cleanup(env.close)
			}
			rep.Cases = append(rep.Cases, res)
			switch res.Status {
			case StatusSkip:
				t.Skip(res.Reason)
			case StatusFail:
				assert.Fail(t, "conformance case "+c.name+" failed", res.Reason)
			}
		})
	}
	return rep
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
	cases    []*caseDef
	newEval  func(effect.ScriptReader, spi.Backend, *effect.Options) (evaluator, error)
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
	if k.limits.WallClock < 0 || k.limits.MemoryBytes < 0 || k.watchdog < 0 {
		return nil, errors.New("conformance: negative limit or watchdog")
	}
	if k.limits.WallClock == 0 {
		k.limits.WallClock = DefaultWallClock
	}
	if k.limits.MemoryBytes == 0 {
		k.limits.MemoryBytes = DefaultMemoryBytes
	}
	if k.watchdog == 0 {
		k.watchdog = DefaultWatchdog
	}

	caps, err := probeCapabilities(factory)
	if err != nil {
		return nil, err
	}
	k.caps = caps

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
// it.
func probeCapabilities(factory spi.Factory) (caps spi.Capabilities, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("conformance: factory panicked: %v", r)
		}
	}()
	b, err := factory()
	if err != nil {
		return spi.Capabilities{}, fmt.Errorf("conformance: factory failed: %w", err)
	}
	if b == nil {
		return spi.Capabilities{}, errors.New("conformance: factory returned a nil backend")
	}
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	caps = b.Capabilities()
	if err := caps.Validate(); err != nil {
		return spi.Capabilities{}, fmt.Errorf("conformance: the backend declares invalid capabilities: %w", err)
	}
	return caps, nil
}

func (k *kit) report() *Report {
	return &Report{Language: k.caps.Language, Capabilities: k.caps, Cases: make([]CaseResult, 0, len(k.cases))}
}

// runCase runs one case under the watchdog. The returned env (nil for a
// skip) must be closed by the caller.
func (k *kit) runCase(ctx context.Context, c *caseDef) (CaseResult, *env) {
	start := time.Now()
	res := CaseResult{Name: c.name}
	if reason := c.gate(k.caps); reason != "" {
		res.Status, res.Reason = StatusSkip, reason
		return res, nil
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
		if !e.loadScripts(c.scripts) {
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
	fails, pass := e.finish()
	res.Duration = time.Since(start)
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
	default:
		res.Status = StatusPass
		res.Reason = pass
	}
	return res, e
}

// env is one case's world: its store, its backends, its findings.
type env struct {
	k     *kit
	name  string
	store *effect.MemoryStore
	addrs map[string]effect.Address

	mu       sync.Mutex
	fails    []string
	pass     string
	finished bool
	closers  []io.Closer
	closed   bool
}

func newEnv(k *kit, name string) *env {
	return &env{k: k, name: name, store: effect.NewMemoryStore(), addrs: map[string]effect.Address{}}
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

func (e *env) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.fails) > 0
}

// finish freezes the findings: a goroutine the watchdog left behind can no
// longer change them.
func (e *env) finish() ([]string, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finished = true
	return slices.Clone(e.fails), e.pass
}

// close closes every backend the case made. A backend made afterwards (by
// a goroutine the watchdog left behind) is closed at once.
func (e *env) close() {
	e.mu.Lock()
	cs := e.closers
	e.closers, e.closed = nil, true
	e.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

// loadScripts puts the named fixture scripts in the case's store.
func (e *env) loadScripts(stems []string) bool {
	for _, stem := range stems {
		b, err := e.k.set.Script(stem)
		if err != nil {
			e.failf("the %s fixture set has no script %s%s (%v)", e.k.set.Language, stem, e.k.set.Ext, err)
			return false
		}
		addr, err := e.store.Put(b)
		if err != nil {
			e.failf("storing fixture %s%s: %v", stem, e.k.set.Ext, err)
			return false
		}
		e.addrs[stem] = addr
	}
	return true
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
		_ = c.Close()
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

// eval runs the fixture stem with input (JSON text) under limits.
func (e *env) eval(ctx context.Context, ev evaluator, stem string, input []byte, limits spi.Limits) ([]byte, error) {
	return ev.Evaluate(ctx, effect.Call{Script: e.addrs[stem], Input: rawJSON(input), Limits: limits})
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
