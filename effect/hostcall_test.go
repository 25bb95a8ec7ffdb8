package effect

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// relay is a backend that declares HostCalls and makes the host calls its
// input lists, as a script would: {"calls": [{"name": N, "args": A}, …],
// "concurrent": bool, "late": bool}. It answers with one entry per call,
// {"ok": RESULT} or {"err": MESSAGE}, stopping at the first call after
// which its context is done. With late set it keeps the broker and calls
// it once more after returning, reporting the error on lateErr. With
// detach set it makes the calls on a goroutine of its own and returns when
// its context is done, leaving that goroutine behind (as goja and starlark
// leave their script's goroutine in a host function that ignores its
// context).
type relay struct {
	hostCalls     bool
	deterministic bool // declares Deterministic (durable_test.go)
	files         bool // declares Files (files_test.go)
	entered       atomic.Int64
	ctxDone       atomic.Bool // the backend's context was done when it returned
	lateErr       chan error
	exited        chan struct{} // one value per Evaluate that returned
}

func newRelay() *relay {
	return &relay{hostCalls: true, lateErr: make(chan error, 1), exited: make(chan struct{}, 64)}
}

// waitExit waits for an Evaluate of r to return (the effect may stop
// waiting for it first).
func (r *relay) waitExit(t testing.TB) {
	t.Helper()
	select {
	case <-r.exited:
	case <-timeAfterWatchdog():
		t.Fatal("the relay's Evaluate did not return")
	}
}

func (r *relay) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "relay", Network: spi.NetworkNone, WallClock: spi.WallClockHard, FreshPerRun: true, HostCalls: r.hostCalls, Deterministic: r.deterministic, Files: r.files}
}

type relayCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

func (r *relay) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	r.entered.Add(1)
	defer func() {
		select {
		case r.exited <- struct{}{}:
		default:
		}
	}()
	var in struct {
		Calls      []relayCall `json:"calls"`
		Concurrent bool        `json:"concurrent"`
		Late       bool        `json:"late"`
		Detach     bool        `json:"detach"`
		Start      bool        `json:"start"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return spi.Threw("TypeError", "bad input"), nil
	}
	if req.Host == nil {
		return spi.OK(json.RawMessage(`"no host"`)), nil
	}
	answers := make([]map[string]any, len(in.Calls))
	one := func(i int) {
		res, err := req.Host.Call(ctx, in.Calls[i].Name, in.Calls[i].Args)
		if err != nil {
			answers[i] = map[string]any{"err": err.Error()}
			return
		}
		answers[i] = map[string]any{"ok": json.RawMessage(res)}
	}
	if in.Start {
		// As a JavaScript engine does: every call issued in order, the
		// answers taken as they come, until all came or the run stopped.
		hs := req.Host.(spi.HostStarter)
		got := make(chan int, len(in.Calls))
		for i := range in.Calls {
			hs.Start(ctx, in.Calls[i].Name, in.Calls[i].Args, func(res json.RawMessage, err error) {
				if err != nil {
					answers[i] = map[string]any{"err": err.Error()}
				} else {
					answers[i] = map[string]any{"ok": json.RawMessage(res)}
				}
				got <- i
			})
		}
		for range in.Calls {
			select {
			case <-got:
			case <-ctx.Done():
				r.ctxDone.Store(true)
				return spi.Outcome{}, ctx.Err()
			}
		}
	} else if in.Detach {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range in.Calls {
				one(i)
			}
		}()
		select {
		case <-done:
		case <-ctx.Done():
			return spi.Outcome{}, ctx.Err()
		}
	} else if in.Concurrent {
		var wg sync.WaitGroup
		for i := range in.Calls {
			wg.Go(func() { one(i) })
		}
		wg.Wait()
	} else {
		for i := range in.Calls {
			one(i)
			if ctx.Err() != nil {
				r.ctxDone.Store(true)
				return spi.Outcome{}, ctx.Err()
			}
		}
	}
	if in.Late {
		h := req.Host
		go func() {
			_, err := h.Call(context.Background(), "echo", json.RawMessage(`1`))
			r.lateErr <- err
		}()
	}
	for i := range answers {
		if answers[i] == nil {
			answers[i] = map[string]any{}
		}
	}
	out, _ := json.Marshal(answers)
	return spi.OK(out), nil
}

// hostFixture is an effect over a relay with opts.
func hostFixture(t testing.TB, opts *Options) (*Effect, *relay) {
	t.Helper()
	r := newRelay()
	e, err := New(newMemoryStore(), r, opts)
	require.NoError(t, err)
	return e, r
}

// relayInput builds the relay's input.
func relayInput(concurrent bool, calls ...relayCall) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"calls": calls, "concurrent": concurrent})
	return b
}

func echoHost(_ context.Context, args json.RawMessage) (any, error) { return args, nil }

var hostScript = []byte("host script")

func TestHostCallsRoundTripInOrder(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	record := func(name string) HostFunc {
		return func(_ context.Context, args json.RawMessage) (any, error) {
			mu.Lock()
			seen = append(seen, name+" "+string(args))
			mu.Unlock()
			return map[string]any{"from": name, "args": args, "big": json.Number("9007199254740991"), "text": "é 😀"}, nil
		}
	}
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"orders": record("orders")}})
	out, err := e.Evaluate(context.Background(), Call{
		Source: hostScript,
		Input: relayInput(false,
			relayCall{"orders", json.RawMessage(`{"since":"2026-01-01"}`)},
			relayCall{"rates", json.RawMessage(`[1,2]`)},
			relayCall{"orders", nil}),
		Host: HostFuncs{"rates": record("rates")},
	})
	require.NoError(t, err)
	assert.Equal(t, []string{`orders {"since":"2026-01-01"}`, `rates [1,2]`, `orders null`}, seen, "calls arrive in order with exact arguments; no argument is null")
	assert.JSONEq(t, `[{"ok":{"from":"orders","args":{"since":"2026-01-01"},"big":9007199254740991,"text":"é 😀"}},
		{"ok":{"from":"rates","args":[1,2],"big":9007199254740991,"text":"é 😀"}},
		{"ok":{"from":"orders","args":null,"big":9007199254740991,"text":"é 😀"}}]`, string(out))
}

func TestHostCallOverridesByName(t *testing.T) {
	fixed := func(v string) HostFunc {
		return func(context.Context, json.RawMessage) (any, error) { return v, nil }
	}
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"a": fixed("effect"), "b": fixed("effect")}})
	out, err := e.Evaluate(context.Background(), Call{Source: hostScript,
		Input: relayInput(false, relayCall{"a", nil}, relayCall{"b", nil}),
		Host:  HostFuncs{"b": fixed("call")}})
	require.NoError(t, err)
	assert.JSONEq(t, `[{"ok":"effect"},{"ok":"call"}]`, string(out))
}

func TestHostCallErrorsThrownIntoScript(t *testing.T) {
	long := strings.Repeat("x", 3*MaxTextUnits)
	e, _ := hostFixture(t, &Options{
		MaxHostArgBytes:    16,
		MaxHostResultBytes: 16,
		Host: HostFuncs{
			"fails": func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("no orders \x00 today") },
			"long":  func(context.Context, json.RawMessage) (any, error) { return nil, errors.New(long) },
			"big":   func(context.Context, json.RawMessage) (any, error) { return strings.Repeat("y", 20), nil },
			"echo":  echoHost,
		},
	})
	out, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false,
		relayCall{"fails", nil},
		relayCall{"nope", nil},
		relayCall{"echo", json.RawMessage(`"0123456789abcdef"`)},
		relayCall{"big", nil},
		relayCall{"long", nil},
	)})
	require.NoError(t, err)
	var got []struct{ Err string }
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, 5)
	assert.Equal(t, "no orders \uFFFD today", got[0].Err, "a host error's text, made storable")
	assert.Equal(t, `effect: unknown host function "nope"`, got[1].Err)
	assert.Equal(t, "effect: host call argument is 18 bytes, over the limit of 16 (MaxHostArgBytes)", got[2].Err)
	assert.Equal(t, "effect: host function result is 22 bytes, over the limit of 16 (MaxHostResultBytes)", got[3].Err)
	assert.True(t, strings.HasSuffix(got[4].Err, truncationMarker), "a long host error is bounded")
	assert.Len(t, got[4].Err, MaxTextUnits+len(truncationMarker))
}

func TestHostCallArgsMustBeJSON(t *testing.T) {
	called := false
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"f": func(context.Context, json.RawMessage) (any, error) { called = true; return 1, nil }}})
	// A backend's bytes straight to the broker: the relay would re-encode.
	b := e.newBroker(e.host, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.arm(ctx, cancel, time.Minute, e.newJob())
	_, err := b.Call(ctx, "f", json.RawMessage(`{"a":`))
	assert.Equal(t, errHostArgsJSON, err)
	assert.False(t, called, "invalid arguments never reach the host function")
	b.end()
}

func TestHostCallsBounded(t *testing.T) {
	var calls atomic.Int64
	e, r := hostFixture(t, &Options{MaxHostCalls: 3, Host: HostFuncs{"f": func(context.Context, json.RawMessage) (any, error) {
		calls.Add(1)
		return 1, nil
	}}})
	var cs []relayCall
	for range 10 {
		cs = append(cs, relayCall{"f", nil})
	}
	_, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false, cs...)})
	f := requireFailure(t, err, CodeLimitExceeded)
	assert.Equal(t, LimitHostCalls, f.Kind)
	assert.Equal(t, int64(3), f.Limit)
	assert.Equal(t, "effect: limitExceeded (hostCalls)", f.Error())
	assert.Equal(t, int64(3), calls.Load(), "the call past the bound is not delivered")
	r.waitExit(t)
	assert.True(t, r.ctxDone.Load(), "the broker cancels the run when it ends it")
}

func TestHostPanicFailsRunUntyped(t *testing.T) {
	e, r := hostFixture(t, &Options{Host: HostFuncs{"boom": func(context.Context, json.RawMessage) (any, error) { panic("host bug") }}})
	_, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false, relayCall{"boom", nil}, relayCall{"boom", nil})})
	requireUntyped(t, err)
	assert.Equal(t, `effect: host function "boom" panicked`, err.Error())
	r.waitExit(t)
	assert.True(t, r.ctxDone.Load())
}

func TestHostResultNotJSONFailsRunUntyped(t *testing.T) {
	e, _ := hostFixture(t, &Options{Host: HostFuncs{
		"ch":  func(context.Context, json.RawMessage) (any, error) { return make(chan int), nil },
		"raw": func(context.Context, json.RawMessage) (any, error) { return json.RawMessage(`{`), nil },
	}})
	for _, name := range []string{"ch", "raw"} {
		_, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false, relayCall{name, nil})})
		requireUntyped(t, err)
		assert.Contains(t, err.Error(), "returned a value that is not JSON")
	}
}

func TestSlowHostCallStoppedByWallClock(t *testing.T) {
	ctxDone := make(chan struct{})
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"slow": func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done()
		close(ctxDone)
		return nil, ctx.Err()
	}}})
	start := time.Now()
	_, err := e.Evaluate(context.Background(), Call{Source: hostScript, Limits: spi.Limits{WallClock: 50 * time.Millisecond},
		Input: relayInput(false, relayCall{"slow", nil})})
	f := requireFailure(t, err, CodeLimitExceeded)
	assert.Equal(t, LimitWallClock, f.Kind, "host time counts toward the wall clock")
	assert.Less(t, time.Since(start), 50*time.Millisecond+watchdog, "stopped at all (wide margin)")
	select {
	case <-ctxDone:
	case <-timeAfterWatchdog():
		t.Fatal("the host function's context was not done")
	}
}

func TestHostCallIgnoringContextIsAbandoned(t *testing.T) {
	release := make(chan struct{})
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"stuck": func(context.Context, json.RawMessage) (any, error) {
		<-release
		return 1, nil
	}}})
	_, err := e.Evaluate(context.Background(), Call{Source: hostScript, Limits: spi.Limits{WallClock: 20 * time.Millisecond},
		Input: relayInput(false, relayCall{"stuck", nil})})
	f := requireFailure(t, err, CodeLimitExceeded)
	assert.Equal(t, LimitWallClock, f.Kind)
	assert.Equal(t, 1, e.Abandoned(), "the stuck host function is counted")
	close(release)
	require.Eventually(t, func() bool { return e.Abandoned() == 0 }, watchdog, time.Millisecond)
}

// A backend blocked in Call on a host function that ignores its context
// is released when the run stops (the wall clock, the caller), before the
// function returns: the function runs off the backend's goroutine, so a
// backend that stops on its context returns from Evaluate in time.
func TestCallReturnsWhileHostFunctionStuck(t *testing.T) {
	for _, byCaller := range []bool{false, true} {
		release := make(chan struct{})
		entered := make(chan struct{}, 1)
		e, r := hostFixture(t, &Options{Host: HostFuncs{"stuck": func(context.Context, json.RawMessage) (any, error) {
			entered <- struct{}{}
			<-release
			return 1, nil
		}}})
		ctx, cancel := context.WithCancel(context.Background())
		limits := spi.Limits{}
		if byCaller {
			go func() { <-entered; cancel() }()
		} else {
			limits.WallClock = 20 * time.Millisecond
		}
		_, err := e.Evaluate(ctx, Call{Source: hostScript, Limits: limits, Input: relayInput(false, relayCall{"stuck", nil})})
		require.Error(t, err)
		r.waitExit(t) // fails (the watchdog) while the function holds the backend's goroutine
		assert.Equal(t, 1, e.Abandoned(), "the stuck function still counts")
		close(release)
		cancel()
		require.Eventually(t, func() bool { return e.Abandoned() == 0 }, watchdog, time.Millisecond)
	}
}

// A backend that returns on its stop and leaves a host function running
// on a goroutine of its own still counts in Abandoned until the function
// returns, so MaxAbandoned holds: the call past it is refused (retryable)
// until the stuck functions return.
func TestHostCallLeftBehindCountsAsAbandoned(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	e, r := hostFixture(t, &Options{MaxAbandoned: 2, Host: HostFuncs{"stuck": func(context.Context, json.RawMessage) (any, error) {
		entered <- struct{}{}
		<-release
		return 1, nil
	}}})
	in, _ := json.Marshal(map[string]any{"calls": []relayCall{{"stuck", nil}}, "detach": true})
	input := json.RawMessage(in)
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-entered; cancel() }()
		_, err := e.Evaluate(ctx, Call{Source: hostScript, Input: input})
		cancel()
		require.ErrorIs(t, err, context.Canceled, "run %d", i)
		assert.Equal(t, i+1, e.Abandoned(), "the host function left running counts")
	}
	_, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false)})
	require.ErrorIs(t, err, ErrOverloaded, "the call past MaxAbandoned is refused")
	requireUntyped(t, err)
	assert.EqualValues(t, 2, r.entered.Load(), "the refused call never reached the backend")

	close(release)
	require.Eventually(t, func() bool { return e.Abandoned() == 0 }, watchdog, time.Millisecond)
	_, err = e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false)})
	require.NoError(t, err, "admitted once the host functions returned")
}

func TestHostCallCancelledByCaller(t *testing.T) {
	ctxDone := make(chan struct{})
	entered := make(chan struct{})
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"slow": func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(entered)
		<-ctx.Done()
		close(ctxDone)
		return nil, ctx.Err()
	}}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	_, err := e.Evaluate(ctx, Call{Source: hostScript, Input: relayInput(false, relayCall{"slow", nil})})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, context.Canceled, err, "the caller's context error, as is")
	select {
	case <-ctxDone:
	case <-timeAfterWatchdog():
		t.Fatal("the host function's context was not done")
	}
}

func TestNoHostCallAfterRunEnded(t *testing.T) {
	var calls atomic.Int64
	e, r := hostFixture(t, &Options{Host: HostFuncs{"echo": func(ctx context.Context, a json.RawMessage) (any, error) {
		calls.Add(1)
		return a, nil
	}}})
	in, _ := json.Marshal(map[string]any{"calls": []relayCall{{"echo", json.RawMessage(`2`)}}, "late": true})
	out, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: json.RawMessage(in)})
	require.NoError(t, err)
	assert.JSONEq(t, `[{"ok":2}]`, string(out))
	select {
	case err := <-r.lateErr:
		assert.Equal(t, "effect: host call after the run ended", err.Error())
	case <-timeAfterWatchdog():
		t.Fatal("the late call did not return")
	}
	assert.Equal(t, int64(1), calls.Load(), "the late call was not delivered")
}

func TestHostFunctionsRefusedWithoutHostCalls(t *testing.T) {
	r := newRelay()
	r.hostCalls = false
	_, err := New(newMemoryStore(), r, &Options{Host: HostFuncs{"f": echoHost}})
	requireInvalid(t, err, ErrInvalidHost)

	e, err := New(newMemoryStore(), r, nil)
	require.NoError(t, err)
	_, err = e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false), Host: HostFuncs{"f": echoHost}})
	requireInvalid(t, err, ErrInvalidHost)
	assert.Zero(t, r.entered.Load(), "refused before the backend is touched")

	out, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false)})
	require.NoError(t, err)
	assert.Equal(t, `"no host"`, string(out), "without host functions the request carries no broker")
}

func TestHostFunctionsValidated(t *testing.T) {
	for _, fns := range []HostFuncs{
		{"": echoHost},
		{"1a": echoHost},
		{"a-b": echoHost},
		{"é": echoHost},
		{strings.Repeat("a", MaxHostNameBytes+1): echoHost},
		{"ok": nil},
	} {
		_, err := New(newMemoryStore(), newRelay(), &Options{Host: fns})
		requireInvalid(t, err, ErrInvalidHost)
		e, r := hostFixture(t, nil)
		_, err = e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false), Host: fns})
		requireInvalid(t, err, ErrInvalidHost)
		assert.Zero(t, r.entered.Load())
	}
	for _, o := range []Options{{MaxHostCalls: -1}, {MaxHostArgBytes: -1}, {MaxHostResultBytes: -1}} {
		_, err := New(newMemoryStore(), newRelay(), &o)
		requireInvalid(t, err, ErrInvalidLimits)
	}
	_, err := New(newMemoryStore(), newRelay(), &Options{Host: HostFuncs{"_a9": echoHost, strings.Repeat("Z", MaxHostNameBytes): echoHost}})
	require.NoError(t, err)
}

func TestUnknownHostNameBounded(t *testing.T) {
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"f": echoHost}})
	out, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(false, relayCall{strings.Repeat("n", 1000) + "\x01", nil})})
	require.NoError(t, err)
	var got []struct{ Err string }
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, `effect: unknown host function "`+strings.Repeat("n", MaxHostNameBytes)+`"…`, got[0].Err)
}

func TestHostCallsInTheRecord(t *testing.T) {
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"echo": echoHost}})
	var mu sync.Mutex
	var kinds []EventKind
	rec, err := e.Run(context.Background(), Call{Source: hostScript,
		Input:  relayInput(false, relayCall{"echo", json.RawMessage(`[1,2]`)}, relayCall{"echo", json.RawMessage(`3`)}),
		Events: func(ev Event) { mu.Lock(); kinds = append(kinds, ev.Kind); mu.Unlock() }})
	require.NoError(t, err)
	assert.Equal(t, int64(2), rec.Stats.HostCalls, "every delivered call is counted")
	assert.Equal(t, int64(6), rec.Stats.HostCallBytesIn)
	assert.Equal(t, int64(6), rec.Stats.HostCallBytesOut)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, k := range kinds {
			if k == EventHostCallBegun || k == EventHostCallEnded {
				n++
			}
		}
		return n == 4
	}, watchdog, time.Millisecond, "a begun and an ended event per call")
}
