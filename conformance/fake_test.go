package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"

	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/fixtures/javascript"
	"github.com/sandbank/sandbank/spi"
)

// behavior acts out what a real engine would do with one fixture script.
type behavior func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error)

// fakeConfig describes a family of fake backends: what they declare, how
// they act on each fixture, and counters shared by every instance.
type fakeConfig struct {
	caps      spi.Capabilities
	set       fixtures.Set
	cpuBudget time.Duration       // > 0: runaway loops end in limit cpu after it
	override  map[string]behavior // per fixture stem, replacing the good behaviour

	wrap         func(*fake) spi.Backend // optional: what the factory returns around the instance
	made, closed atomic.Int64
	shared       atomic.Int64 // state a broken backend keeps across instances
	inflight     atomic.Int64
}

// fake is one instance. It "runs" each fixture script the way an engine
// would have to: it reads the nonce from the script's salt, puts the
// placeholder back, recognises the template by its hash, and acts out the
// behaviour a well-behaved engine would show, answering the nonce where
// the script would.
type fake struct {
	cfg        *fakeConfig
	stems      map[[32]byte]string
	runs       atomic.Int64 // state a broken backend keeps across runs
	firstLimit atomic.Int64 // the first memory limit seen (a sticky backend keeps it)
	closed     atomic.Bool
	crashed    atomic.Bool
	warmed     atomic.Bool
}

var (
	_ spi.Backend = (*fake)(nil)
	_ io.Closer   = (*fake)(nil)
)

// goodCaps is the strongest declaration.
func goodCaps() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, CPU: true, FreshPerRun: true, HostCalls: true, Logs: true, Deterministic: true, Files: true}
}

// newFakeConfig returns a well-behaved configuration over the JavaScript
// set. It declares a CPU budget but, like a real backend's default, one too
// long to end any case: pass smallBudget() as Options.CPUBudget.
func newFakeConfig() *fakeConfig {
	return &fakeConfig{caps: goodCaps(), set: javascript.Set(), override: map[string]behavior{}}
}

// smallBudget is the well-behaved fake configured with a small CPU budget.
func smallBudget() spi.Factory {
	c := newFakeConfig()
	c.cpuBudget = 20 * time.Millisecond
	return c.factory()
}

func (c *fakeConfig) factory() spi.Factory {
	return func() (spi.Backend, error) {
		c.made.Add(1)
		f := &fake{cfg: c, stems: map[[32]byte]string{}}
		for _, stem := range c.set.Cases() {
			b, err := c.set.Script(stem)
			if err != nil {
				return nil, err
			}
			f.stems[sha256.Sum256(b)] = stem
		}
		if c.wrap != nil {
			return c.wrap(f), nil
		}
		return f, nil
	}
}

func (f *fake) Capabilities() spi.Capabilities { return f.cfg.caps }

func (f *fake) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.cfg.closed.Add(1)
	}
	return nil
}

func (f *fake) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if f.crashed.Load() {
		return spi.Outcome{}, errors.New("fake: engine crashed")
	}
	stem, _, ok := f.parse(req.Script)
	if !ok {
		return spi.Threw("SyntaxError", "fake: unknown script"), nil
	}
	if b, ok := f.cfg.override[stem]; ok {
		return b(ctx, f, req)
	}
	if b, ok := goodBehaviors[stem]; ok {
		return b(ctx, f, req)
	}
	return spi.Infrastructure("fake: no behaviour for " + stem), nil
}

// parse recognises a script the kit prepared: the template's stem and the
// nonce it was varied with.
func (f *fake) parse(script []byte) (stem, nonce string, ok bool) {
	if stem, ok := f.stems[sha256.Sum256(script)]; ok {
		return stem, "", true // an unsalted set
	}
	salt := f.cfg.set.Salt
	for _, cut := range []int{0, 1} {
		end := len(script) - cut
		if end < fixtures.NonceLen {
			continue
		}
		n := string(script[end-fixtures.NonceLen : end])
		if !fixtures.ValidNonce(n) || salt == nil {
			continue
		}
		suffix := salt(nil, n)
		if !bytes.HasSuffix(script, suffix) {
			continue
		}
		body := bytes.ReplaceAll(script[:len(script)-len(suffix)], []byte(n), []byte(fixtures.NoncePlaceholder))
		if stem, ok := f.stems[sha256.Sum256(body)]; ok {
			return stem, n, true
		}
	}
	return "", "", false
}

// nonceOf is the nonce req's script was varied with.
func nonceOf(f *fake, req spi.Request) string {
	_, n, _ := f.parse(req.Script)
	return n
}

// returnsNonce answers the script's nonce as a JSON string.
func returnsNonce(_ context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
	return spi.OK(json.RawMessage(`"` + nonceOf(f, req) + `"`)), nil
}

// memoryProbe holds the bytes the input asks for against the memory
// limit, as an engine with an exact cap would (factor scales the cap).
func memoryProbe(factor float64, sticky bool) behavior {
	return func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
		var n int64
		if err := json.Unmarshal(req.Input, &n); err != nil {
			return spi.Threw("TypeError", "fake: bad input"), nil
		}
		limit := req.Limits.MemoryBytes
		if sticky {
			f.firstLimit.CompareAndSwap(0, limit)
			limit = f.firstLimit.Load()
		}
		if float64(n) > factor*float64(limit)*0.9 {
			return spi.Limited(spi.LimitMemory), nil
		}
		return returnsNonce(ctx, f, req)
	}
}

func echoBehavior(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	return spi.OK(append(json.RawMessage(nil), req.Input...)), nil
}

// loopBehavior honours the CPU budget, the wall clock and ctx.
func loopBehavior(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
	d, kind := req.Limits.WallClock, spi.LimitWallClock
	if b := f.cfg.cpuBudget; f.cfg.caps.CPU && b > 0 && b < d {
		d, kind = b, spi.LimitCPU
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return spi.Limited(kind), nil
	case <-ctx.Done():
		return spi.Outcome{}, ctx.Err()
	}
}

func wallClockBehavior(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	t := time.NewTimer(req.Limits.WallClock)
	defer t.Stop()
	select {
	case <-t.C:
		return spi.Limited(spi.LimitWallClock), nil
	case <-ctx.Done():
		return spi.Outcome{}, ctx.Err()
	}
}

func returns(v string) behavior {
	return func(context.Context, *fake, spi.Request) (spi.Outcome, error) { return spi.OK(json.RawMessage(v)), nil }
}

func outcome(o spi.Outcome) behavior {
	return func(context.Context, *fake, spi.Request) (spi.Outcome, error) { return o, nil }
}

var goodBehaviors = map[string]behavior{
	"logs":       logsBehavior(logsGood),
	"echo":       echoBehavior,
	"rich_value": echoBehavior,
	"abort":      echoBehavior,
	"throw": func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		var in struct{ Message string }
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return spi.Threw("TypeError", "fake: bad input"), nil
		}
		return spi.Threw("Error", in.Message), nil
	},
	"syntax_error":    outcome(spi.Threw("SyntaxError", "unexpected token ';'")),
	"runaway_loop":    loopBehavior,
	"cpu_budget":      loopBehavior,
	"abort_mid_run":   loopBehavior,
	"runaway_native":  wallClockBehavior,
	"allocation_bomb": outcome(spi.Limited(spi.LimitMemory)),
	"deep_recursion":  outcome(spi.Threw("RangeError", "Maximum call stack size exceeded")),
	"no_network":      returns(`{"tried":["fetch","XMLHttpRequest","WebSocket"],"reached":[]}`),
	"no_escape":       returns(`{"found":[],"clock":946684800003}`),
	"fresh_per_run": func(_ context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
		return spi.OK(json.RawMessage(`{"runs":1,"nonce":"` + nonceOf(f, req) + `"}`)), nil
	},
	"memory_probe": memoryProbe(1, false),
	"async_value":  asyncBehavior,
	"cpu_light":    returnsNonce,
	"host_objects": func(_ context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
		return spi.OK(json.RawMessage(`{"names":["Math","Math.abs","input","JSON","JSON.parse"],"nonce":"` + nonceOf(f, req) + `"}`)), nil
	},
	"input_too_big": func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		// An engine's values take far more room than their JSON text.
		if int64(len(req.Input))*4 > req.Limits.MemoryBytes {
			return spi.InputTooLarge(), nil
		}
		return spi.OK(append(json.RawMessage(nil), req.Input...)), nil
	},
	"throw_named":        throwNamed(false),
	"composition_throw":  outcome(spi.Threw("Error", "composition: "+strings.Repeat("y", 50000)+"\xed\xa0\x80"+strings.Repeat("z", 50000))),
	"composition_output": returns(`"` + strings.Repeat("x", 2_000_000) + `"`),
	"files_in":           filesInBehavior,
	"files_out":          filesOutBehavior,
	"files_bounds":       filesEngine{}.behavior,
}

// asyncBehavior acts out async_value's script: the value, the rejection,
// or the never-settling promise, reported at the wall clock.
func asyncBehavior(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
	var in struct {
		Mode string          `json:"mode"`
		N    int             `json:"n"`
		Text string          `json:"text"`
		List json.RawMessage `json:"list"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return spi.Threw("TypeError", "fake: bad input"), nil
	}
	switch in.Mode {
	case "reject":
		return spi.Threw("Error", in.Text), nil
	case "pending":
		return spi.Threw("Error", "the script's promise never settled"), nil
	}
	text, _ := json.Marshal(in.Text + "✓")
	return spi.OK(json.RawMessage(fmt.Sprintf(`{"n":%d,"text":%s,"list":%s}`, in.N+1, text, in.List))), nil
}

// throwNamed acts out throw_named: the error under its own name, or
// (renameRejections) every rejection named Error, as a backend that
// reports a promise's rejection without its error's name.
func throwNamed(renameRejections bool) behavior {
	return func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		var in struct {
			Name, Message string
			Async         bool
		}
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return spi.Threw("TypeError", "fake: bad input"), nil
		}
		if in.Async && renameRejections {
			return spi.Threw("Error", in.Message), nil
		}
		return spi.Threw(in.Name, in.Message), nil
	}
}

// Broken behaviours, one per rule they break.

// sharedLargeSlot echoes, handing every input over 64 KiB through one
// slot the instance's runs share, read once another large run is in.
func sharedLargeSlot() behavior {
	var mu sync.Mutex
	var slot json.RawMessage
	var inside atomic.Int64
	return func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
		if len(req.Input) <= echoLargeBytes {
			return echoBehavior(ctx, f, req)
		}
		mu.Lock()
		slot = append(json.RawMessage(nil), req.Input...)
		mu.Unlock()
		inside.Add(1)
		defer inside.Add(-1)
		for end := time.Now().Add(time.Second); inside.Load() < 2 && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		return spi.OK(slot), nil
	}
}

// zombieFor acts out o at once and leaves a goroutine burning CPU for d:
// an engine that returns at its deadline while the script's operation
// runs on.
func zombieFor(d time.Duration, o spi.Outcome) behavior {
	return func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
		out, err := wallClockBehavior(ctx, f, req)
		if err != nil {
			return out, err
		}
		go func() {
			x := 0
			for end := time.Now().Add(d); time.Now().Before(end) && !f.closed.Load(); {
				for i := 0; i < 1_000_000; i++ {
					x += i
				}
			}
			_ = x
		}()
		return o, nil
	}
}

// statefulRuns counts runs on the instance, as a reused environment would.
func statefulRuns(_ context.Context, f *fake, _ spi.Request) (spi.Outcome, error) {
	return spi.OK(json.RawMessage(fmt.Sprintf(`{"runs":%d}`, f.runs.Add(1)))), nil
}

// concurrentRuns is fresh in sequence but shares state between runs that
// overlap.
func concurrentRuns(_ context.Context, f *fake, _ spi.Request) (spi.Outcome, error) {
	n := f.cfg.inflight.Add(1)
	defer f.cfg.inflight.Add(-1)
	time.Sleep(20 * time.Millisecond)
	return spi.OK(json.RawMessage(fmt.Sprintf(`{"runs":%d}`, n))), nil
}

// blockUntil ignores ctx and returns only when release is closed.
func blockUntil(release <-chan struct{}, o spi.Outcome) behavior {
	return func(context.Context, *fake, spi.Request) (spi.Outcome, error) {
		<-release
		return o, nil
	}
}

// hogMemory really allocates and touches n bytes of host memory, holds them
// for a while, then reports a memory limit.
func hogMemory(n int) behavior {
	return func(context.Context, *fake, spi.Request) (spi.Outcome, error) {
		b := make([]byte, n)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		time.Sleep(30 * time.Millisecond)
		runtime.KeepAlive(b)
		return spi.Limited(spi.LimitMemory), nil
	}
}

// freeMemory returns a hog's memory to the OS so later measurements start
// clean.
func freeMemory() { runtime.GC(); debug.FreeOSMemory() }

// reachCanary really performs an HTTP GET to the input's URL, then lies
// that it reached nothing.
func reachCanary(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	var in struct{ URL string }
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return spi.Outcome{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, in.URL, nil)
	if err != nil {
		return spi.Outcome{}, err
	}
	if resp, err := http.DefaultClient.Do(hreq); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return spi.OK(json.RawMessage(`{"tried":["fetch"],"reached":[]}`)), nil
}

// leakedClock reports the host's own clock.
func leakedClock(context.Context, *fake, spi.Request) (spi.Outcome, error) {
	return spi.OK(json.RawMessage(fmt.Sprintf(`{"found":[],"clock":%d}`, time.Now().UnixMilli()))), nil
}

// sleepThen returns o after d, ignoring ctx.
func sleepThen(d time.Duration, o spi.Outcome) behavior {
	return func(context.Context, *fake, spi.Request) (spi.Outcome, error) {
		time.Sleep(d)
		return o, nil
	}
}

// crashAfter acts out o and leaves the instance broken for every later run.
func crashAfter(o spi.Outcome) behavior {
	return func(_ context.Context, f *fake, _ spi.Request) (spi.Outcome, error) {
		f.crashed.Store(true)
		return o, nil
	}
}

// brokenEvaluator puts a deliberately broken effect in front of the real
// one, to prove that the kit's effect-side assertions can fail.
type brokenEvaluator struct {
	inner   evaluator
	scripts effect.ScriptReader
	parser  *fake
	wrap    func(ctx context.Context, stem string, run func(context.Context) ([]byte, error)) ([]byte, error)
}

func (b *brokenEvaluator) Evaluate(ctx context.Context, call effect.Call) ([]byte, error) {
	src, _ := b.scripts.ReadScript(context.Background(), call.Script)
	stem, _, _ := b.parser.parse(src)
	return b.wrap(ctx, stem, func(c context.Context) ([]byte, error) { return b.inner.Evaluate(c, call) })
}

// withBrokenEffect makes every case of t run through a broken effect.
func withBrokenEffect(t *testing.T, wrap func(ctx context.Context, stem string, run func(context.Context) ([]byte, error)) ([]byte, error)) {
	t.Helper()
	parser, err := newFakeConfig().factory()()
	require.NoError(t, err)
	orig := newEvaluator
	newEvaluator = func(s effect.ScriptReader, b spi.Backend, o *effect.Options) (evaluator, error) {
		ev, err := orig(s, b, o)
		if err != nil {
			return nil, err
		}
		return &brokenEvaluator{inner: ev, scripts: s, parser: parser.(*fake), wrap: wrap}, nil
	}
	t.Cleanup(func() { newEvaluator = orig })
}

// refuseNetwork acts out an engine that refuses the probe's request by
// aborting the script: with a message that names the URL when fixed is
// empty, or with the fixed message otherwise.
func refuseNetwork(fixed string) behavior {
	return func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		if fixed != "" {
			return spi.Threw("trap", fixed), nil
		}
		var in struct{ URL string }
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return spi.Outcome{}, err
		}
		return spi.Threw("trap", "HTTP request to '"+in.URL+"' is not allowed"), nil
	}
}

// burnAfter acts out o and leaves a goroutine burning CPU until the
// instance is closed: an engine that reports the limit while it keeps
// running.
func burnAfter(o spi.Outcome) behavior {
	return func(_ context.Context, f *fake, _ spi.Request) (spi.Outcome, error) {
		go func() {
			x := 0
			for !f.closed.Load() {
				for i := 0; i < 1_000_000; i++ {
					x += i
				}
			}
			_ = x
		}()
		return o, nil
	}
}

// lateAfterCancel waits for ctx to end and returns d later.
func lateAfterCancel(d time.Duration) behavior {
	return func(ctx context.Context, _ *fake, _ spi.Request) (spi.Outcome, error) {
		<-ctx.Done()
		time.Sleep(d)
		return spi.Outcome{}, ctx.Err()
	}
}

// sortedEcho echoes the input with its object keys sorted (a backend that
// round-trips the input through a Go map).
func sortedEcho(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(req.Input))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return spi.Outcome{}, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return spi.Outcome{}, err
	}
	return spi.OK(b), nil
}

// cachedEcho answers every echo on an instance with the first answer it
// gave: a result cache keyed by something other than the request.
func cachedEcho() behavior {
	var mu sync.Mutex
	var first json.RawMessage
	return func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = append(json.RawMessage(nil), req.Input...)
		}
		return spi.OK(first), nil
	}
}

// swappedEcho answers each overlapping echo with the input of the request
// that came before it: responses swapped between concurrent requests.
func swappedEcho() behavior {
	var mu sync.Mutex
	var prev json.RawMessage
	return func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		out := prev
		prev = append(json.RawMessage(nil), req.Input...)
		if out == nil {
			out = prev
		}
		return spi.OK(out), nil
	}
}

// hangingClose is a fake whose Close blocks until release is closed.
type hangingClose struct {
	*fake
	release <-chan struct{}
}

func (h hangingClose) Close() error {
	<-h.release
	return h.fake.Close()
}

// warmer is a fake with a Warm method that does what warm says.
type warmer struct {
	*fake
	warm func(ctx context.Context, f *fake) error
}

func (w warmer) Warm(ctx context.Context) error { return w.warm(ctx, w.fake) }
