package effect

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sandbank/sandbank/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startInput is the relay's input for calls issued with Start, in order.
func startInput(calls ...relayCall) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"calls": calls, "start": true})
	return b
}

// gate is a host function that reports each call's argument as it enters
// and blocks until released (one release per call), counting how many run
// at once.
type gate struct {
	entered        chan string
	release        chan struct{}
	inside, most   atomic.Int64
	ctxDone        chan struct{} // one value per call whose context was done
	honoursContext bool
}

func newGate(n int) *gate {
	return &gate{entered: make(chan string, n), release: make(chan struct{}, n), ctxDone: make(chan struct{}, n), honoursContext: true}
}

func (g *gate) fn(ctx context.Context, args json.RawMessage) (any, error) {
	in := g.inside.Add(1)
	for {
		m := g.most.Load()
		if in <= m || g.most.CompareAndSwap(m, in) {
			break
		}
	}
	g.entered <- string(args)
	defer g.inside.Add(-1)
	select {
	case <-g.release:
		return args, nil
	case <-ctx.Done():
		g.ctxDone <- struct{}{}
		return nil, ctx.Err()
	}
}

func (g *gate) waitEntered(t *testing.T) string {
	t.Helper()
	select {
	case a := <-g.entered:
		return a
	case <-timeAfterWatchdog():
		t.Fatal("no host function entered")
		return ""
	}
}

func gateCalls(n int) []relayCall {
	cs := make([]relayCall, n)
	for i := range cs {
		cs[i] = relayCall{"wait", json.RawMessage(strconv.Itoa(i))}
	}
	return cs
}

// Calls issued together run together, up to MaxConcurrentHostCalls: the
// first bound-many all enter before any is released (they overlap), the
// rest wait and start one per slot freed, in the order issued; the record
// lists every call in that order.
func TestHostCallsConcurrentWithinTheBound(t *testing.T) {
	const bound, n = 3, 7
	g := newGate(n)
	e, _ := hostFixture(t, &Options{MaxConcurrentHostCalls: bound, Host: HostFuncs{"wait": g.fn}})
	type result struct {
		rec *Record
		err error
	}
	done := make(chan result, 1)
	go func() {
		rec, err := e.Run(context.Background(), Call{Source: hostScript, Input: startInput(gateCalls(n)...)})
		done <- result{rec, err}
	}()
	first := map[string]bool{}
	for range bound {
		first[g.waitEntered(t)] = true
	}
	assert.Equal(t, map[string]bool{"0": true, "1": true, "2": true}, first, "the first calls issued run at once, none released yet")
	for k := bound; k < n; k++ {
		g.release <- struct{}{}
		assert.Equal(t, strconv.Itoa(k), g.waitEntered(t), "a freed slot goes to the next call issued")
	}
	for range bound {
		g.release <- struct{}{}
	}
	var r result
	select {
	case r = <-done:
	case <-timeAfterWatchdog():
		t.Fatal("the run did not end")
	}
	require.NoError(t, r.err)
	assert.JSONEq(t, `[{"ok":0},{"ok":1},{"ok":2},{"ok":3},{"ok":4},{"ok":5},{"ok":6}]`, string(r.rec.Value))
	assert.EqualValues(t, bound, g.most.Load(), "never more than MaxConcurrentHostCalls at once")
	require.Len(t, r.rec.HostCalls, n)
	for i, c := range r.rec.HostCalls {
		assert.Equal(t, "wait", c.Name)
		assert.Equal(t, record.HostCallOK, c.Outcome, "call %d", i)
		assert.Equal(t, int64(len(strconv.Itoa(i))), c.BytesIn, "listed in the order issued")
		assert.GreaterOrEqual(t, c.Start, c.Issued)
		if i > 0 {
			assert.GreaterOrEqual(t, c.Issued, r.rec.HostCalls[i-1].Issued, "listed in the order issued")
		}
	}
	assert.EqualValues(t, n, r.rec.Stats.HostCalls)
}

// A run stopped with calls in flight cancels every one: the running host
// functions' contexts are done, the queued ones never run, and the record
// lists them all as canceled.
func TestHostCallsAllCanceledWhenTheRunStops(t *testing.T) {
	const bound, n = 2, 5
	g := newGate(n)
	e, _ := hostFixture(t, &Options{MaxConcurrentHostCalls: bound, Host: HostFuncs{"wait": g.fn}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for range bound {
			<-g.entered
		}
		cancel()
	}()
	rec, err := e.Run(ctx, Call{Source: hostScript, Input: startInput(gateCalls(n)...)})
	require.ErrorIs(t, err, context.Canceled)
	for range bound {
		select {
		case <-g.ctxDone:
		case <-timeAfterWatchdog():
			t.Fatal("a running host function's context was not done")
		}
	}
	require.NotNil(t, rec)
	require.Len(t, rec.HostCalls, n, "every call issued is listed")
	for i, c := range rec.HostCalls {
		assert.Equal(t, record.HostCallCanceled, c.Outcome, "call %d", i)
		if i < bound {
			assert.NotZero(t, c.Start, "call %d ran", i)
		} else {
			assert.Zero(t, c.Start, "call %d waited and never ran", i)
		}
	}
	require.Eventually(t, func() bool { return e.Abandoned() == 0 }, watchdog, 1e6, "the host functions returned")
	assert.Len(t, g.entered, 0, "no queued call ran after the run ended")
}

// A host function that ignores its context still counts in Abandoned
// until it returns, for concurrent calls too; the run ends at once.
func TestHostCallsConcurrentIgnoringContextAbandoned(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"stuck": func(context.Context, json.RawMessage) (any, error) {
		entered <- struct{}{}
		<-release
		return 1, nil
	}}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; <-entered; cancel() }()
	_, err := e.Evaluate(ctx, Call{Source: hostScript, Input: startInput(relayCall{"stuck", nil}, relayCall{"stuck", nil})})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, e.Abandoned(), "the run counts once while its host functions run")
	close(release)
	require.Eventually(t, func() bool { return e.Abandoned() == 0 }, watchdog, 1e6)
}

func TestMaxConcurrentHostCallsDefaultAndRefusal(t *testing.T) {
	e, _ := hostFixture(t, nil)
	assert.Equal(t, defaultMaxConcurrentHostCalls, e.maxHostConc)
	assert.Equal(t, 8, defaultMaxConcurrentHostCalls)
	_, err := New(newMemoryStore(), newRelay(), &Options{MaxConcurrentHostCalls: -1})
	requireInvalid(t, err, ErrInvalidLimits)
}

// Calls made with Call from several goroutines are also bounded.
func TestHostCallsConcurrentCallBounded(t *testing.T) {
	const bound, n = 2, 6
	g := newGate(n)
	e, _ := hostFixture(t, &Options{MaxConcurrentHostCalls: bound, Host: HostFuncs{"wait": g.fn}})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := e.Evaluate(context.Background(), Call{Source: hostScript, Input: relayInput(true, gateCalls(n)...)})
		assert.NoError(t, err)
	})
	for range bound {
		g.waitEntered(t)
	}
	for range n - bound {
		g.release <- struct{}{}
		g.waitEntered(t)
	}
	for range bound {
		g.release <- struct{}{}
	}
	wg.Wait()
	assert.EqualValues(t, bound, g.most.Load())
}

// A call waiting for its slot when the run's context is done never runs,
// even before the effect ends the broker (a running call returned on the
// cancellation and freed its slot first).
func TestHostCallQueuedNeverRunsOnceStopped(t *testing.T) {
	g := newGate(3)
	e, _ := hostFixture(t, &Options{MaxConcurrentHostCalls: 1})
	b := e.newBroker(HostFuncs{"wait": g.fn}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.arm(ctx, cancel, watchdog, e.newJob())
	answered := make(chan error, 3)
	for i := range 3 {
		b.Start(ctx, "wait", json.RawMessage(strconv.Itoa(i)), func(_ json.RawMessage, err error) { answered <- err })
	}
	assert.Equal(t, "0", g.waitEntered(t))
	cancel() // the broker is not ended: only its context is done
	for range 3 {
		select {
		case err := <-answered:
			assert.Error(t, err)
		case <-timeAfterWatchdog():
			t.Fatal("a call was not answered")
		}
	}
	assert.Len(t, g.entered, 0, "the queued calls never ran")
	b.end()
}

// The calls waiting for a slot hold at most MaxHostArgBytes ×
// MaxConcurrentHostCalls bytes of arguments: past it, a call is refused
// with an error thrown into the script, and listed as an error.
func TestHostCallsWaitingBytesBounded(t *testing.T) {
	g := newGate(4)
	e, _ := hostFixture(t, &Options{MaxConcurrentHostCalls: 1, MaxHostArgBytes: 10, Host: HostFuncs{"wait": g.fn}})
	arg := json.RawMessage(`"123456"`) // 8 bytes: one fits in the 10 bytes, two do not
	type result struct {
		rec *Record
		err error
	}
	done := make(chan result, 1)
	go func() {
		rec, err := e.Run(context.Background(), Call{Source: hostScript, Input: startInput(relayCall{"wait", arg}, relayCall{"wait", arg}, relayCall{"wait", arg})})
		done <- result{rec, err}
	}()
	g.waitEntered(t)
	g.release <- struct{}{}
	g.waitEntered(t)
	g.release <- struct{}{}
	var r result
	select {
	case r = <-done:
	case <-timeAfterWatchdog():
		t.Fatal("the run did not end")
	}
	require.NoError(t, r.err)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(r.rec.Value, &out))
	require.Len(t, out, 3)
	assert.Equal(t, "123456", out[0]["ok"])
	assert.Equal(t, "123456", out[1]["ok"])
	assert.Contains(t, out[2]["err"], "waiting for a slot")
	require.Len(t, r.rec.HostCalls, 3)
	assert.Equal(t, record.HostCallError, r.rec.HostCalls[2].Outcome)
	assert.Zero(t, r.rec.HostCalls[2].Start, "it never ran")
}

// TestHostCallSeqIsTheRecordsOrder: inside a host function,
// HostCallSeq is its call's place in Record.HostCalls (the script's
// order), whatever order the concurrent calls begin in; outside one there
// is none.
func TestHostCallSeqIsTheRecordsOrder(t *testing.T) {
	const n = 7
	var mu sync.Mutex
	seqOf := map[string]int{}
	fn := func(ctx context.Context, args json.RawMessage) (any, error) {
		seq, ok := HostCallSeq(ctx)
		assert.True(t, ok, "a host function knows its place") // not require: this runs on the broker's goroutine
		mu.Lock()
		seqOf[string(args)] = seq
		mu.Unlock()
		return args, nil
	}
	e, _ := hostFixture(t, &Options{Host: HostFuncs{"wait": fn}})
	rec, err := e.Run(context.Background(), Call{Source: hostScript, Input: startInput(gateCalls(n)...)})
	require.NoError(t, err)
	require.Len(t, rec.HostCalls, n)
	for i := range n {
		assert.Equal(t, i+1, seqOf[strconv.Itoa(i)], "call %d", i)
	}
	_, ok := HostCallSeq(context.Background())
	assert.False(t, ok)
}
