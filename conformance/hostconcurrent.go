package conformance

// The concurrency case of host calls, gated by HostCalls and declarable
// (a language whose host calls block declares it inapplicable):
//
//   - host_concurrent: input {"n": N}; the script issues host.wait(i) for
//     i = 0…N-1 at once and returns the answers in that order.
//
// The kit's host function blocks until the kit releases it, so the proof
// is by signals, never by timing: with MaxConcurrentHostCalls set to
// hostConcBound, that many calls must be inside the host function at
// once before any is released, no more ever, and each release must let
// in the next call issued; a run cancelled with calls in flight must end
// every one of them (their contexts done, the queued ones never run).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
)

func init() {
	allCases = append(allCases,
		&caseDef{name: "host_concurrent", gate: needHostCalls, scripts: []string{"host_concurrent"}, run: caseHostConcurrent, proves: []string{"hostCalls"}, declarable: true},
	)
}

// The concurrency case's figures.
const (
	// hostConcBound is the case's MaxConcurrentHostCalls, and
	// hostConcCalls how many calls its script issues at once.
	hostConcBound = 3
	hostConcCalls = 7
	// hostConcStopCalls is how many calls the stopped run issues; it is
	// cancelled once hostConcBound of them are inside the host function.
	hostConcStopCalls = 5
	// hostConcWall is the case's wall clock: the runs wait on the kit.
	hostConcWall = 10 * time.Second
	// hostConcWait bounds how long the kit waits for a call to reach the
	// host function before it fails the case (a backend that makes its
	// calls one at a time never lets the second one in).
	hostConcWait = 5 * time.Second
)

// concGate is the case's host function: each call reports its argument as
// it enters and blocks until the kit releases one call, or its context is
// done.
type concGate struct {
	entered      chan string
	release      chan struct{}
	free         chan struct{} // closed: every call returns at once
	freeOnce     sync.Once
	ctxDone      chan struct{}
	inside, most atomic.Int64
	mu           sync.Mutex
	answers      map[string]string // argument → answer, each with a fresh nonce
}

func newConcGate(n int) *concGate {
	return &concGate{entered: make(chan string, 4*n), release: make(chan struct{}, n), free: make(chan struct{}),
		ctxDone: make(chan struct{}, 4*n), answers: map[string]string{}}
}

func (g *concGate) unblock() { g.freeOnce.Do(func() { close(g.free) }) }

func (g *concGate) fn(hctx context.Context, args json.RawMessage) (any, error) {
	in := g.inside.Add(1)
	defer g.inside.Add(-1)
	for m := g.most.Load(); in > m && !g.most.CompareAndSwap(m, in); m = g.most.Load() {
	}
	a := string(args)
	ans := fmt.Sprintf(`{"i":%s,"nonce":%q}`, a, newNonce())
	g.mu.Lock()
	g.answers[a] = ans
	g.mu.Unlock()
	g.entered <- a
	select {
	case <-g.release:
	case <-g.free:
	case <-hctx.Done():
		g.ctxDone <- struct{}{}
		return nil, hctx.Err()
	}
	return json.RawMessage(ans), nil
}

// waitEntered returns the argument of the next call to enter, or false
// when none did within hostConcWait (or the run ended first).
func (g *concGate) waitEntered(ctx context.Context, ended <-chan struct{}) (string, bool) {
	t := time.NewTimer(hostConcWait)
	defer t.Stop()
	select {
	case a := <-g.entered:
		return a, true
	case <-ended:
		select {
		case a := <-g.entered:
			return a, true
		default:
			return "", false
		}
	case <-t.C:
	case <-ctx.Done():
	}
	return "", false
}

// caseHostConcurrent: calls issued at once overlap, up to the bound, start
// in the order issued, and all come back in order; a run cancelled
// mid-flight cancels every call.
func caseHostConcurrent(ctx context.Context, e *env) {
	limits := spi.Limits{WallClock: hostConcWall, MemoryBytes: e.k.limits.MemoryBytes}
	ev, s, ok := e.hostSetup(limits, func(o *effect.Options) { o.MaxConcurrentHostCalls = hostConcBound })
	if !ok {
		return
	}
	// After checkLate's wait, a queued call run after the stopped run's
	// end would have entered.
	var stopped *concGate
	defer func() {
		if stopped != nil && len(stopped.entered) > 0 {
			e.failf("%d queued host call(s) ran after the run was cancelled", len(stopped.entered))
		}
	}()
	defer e.checkLate(s)
	hostConcOverlap(ctx, e, ev, limits)
	stopped = hostConcStop(ctx, e, ev, limits)
}

// hostConcOverlap is the first half of host_concurrent.
func hostConcOverlap(ctx context.Context, e *env, ev evaluator, limits spi.Limits) {
	g := newConcGate(hostConcCalls)
	defer g.unblock()
	type result struct {
		got []byte
		err error
	}
	done := make(chan result, 1)
	ended := make(chan struct{})
	go func() {
		got, err := e.hostEval(ctx, ev, "host_concurrent", fmt.Appendf(nil, `{"n":%d}`, hostConcCalls), limits, effect.HostFuncs{"wait": g.fn})
		close(ended)
		done <- result{got, err}
	}()
	first := map[string]bool{}
	for len(first) < hostConcBound {
		a, ok := g.waitEntered(ctx, ended)
		if !ok {
			e.failf("only %d host call(s) were in flight at once, none released yet; the script issues %d at once and MaxConcurrentHostCalls is %d (a backend must not wait for one call's answer before relaying the next)", len(first), hostConcCalls, hostConcBound)
			g.unblock()
			<-done
			return
		}
		first[a] = true
	}
	e.figure("callsInFlight", float64(len(first)), "calls", "==", hostConcBound)
	for i := range hostConcBound {
		if !first[strconv.Itoa(i)] {
			e.failf("the first %d calls issued must be the first in flight; call %d was not", hostConcBound, i)
		}
	}
	for k := hostConcBound; k < hostConcCalls; k++ {
		g.release <- struct{}{}
		a, ok := g.waitEntered(ctx, ended)
		if !ok {
			e.failf("releasing one call must let the next one issued (%d) in; none entered", k)
			g.unblock()
			<-done
			return
		}
		if a != strconv.Itoa(k) {
			e.failf("a freed slot must go to the next call issued (%d), got the call with argument %s", k, clip(a))
		}
	}
	for range hostConcBound {
		g.release <- struct{}{}
	}
	r := <-done
	e.figure("mostInFlight", float64(g.most.Load()), "calls", "==", hostConcBound)
	if m := g.most.Load(); m > hostConcBound {
		e.failf("%d host calls ran at once, over MaxConcurrentHostCalls %d", m, hostConcBound)
	}
	if r.err != nil {
		e.failf("%d concurrent host calls must give their answers in order, got %s", hostConcCalls, describe(r.got, r.err))
		return
	}
	want := []byte("[")
	g.mu.Lock()
	for i := range hostConcCalls {
		if i > 0 {
			want = append(want, ',')
		}
		want = append(want, g.answers[strconv.Itoa(i)]...)
	}
	g.mu.Unlock()
	want = append(want, ']')
	if diff := jsonDiff(want, r.got); diff != "" {
		e.failf("the result must be every answer, in the order the calls were issued: %s", diff)
	}
}

// hostConcStop is the second half of host_concurrent: a run cancelled
// once hostConcBound calls are inside the host function returns
// context.Canceled, every running call's context is done, and no queued
// call runs (its gate is returned for that check, or nil).
func hostConcStop(ctx context.Context, e *env, ev evaluator, limits spi.Limits) *concGate {
	g := newConcGate(hostConcStopCalls)
	defer g.unblock()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan struct{})
	entered := make(chan int, 1)
	go func() {
		n := 0
		for n < hostConcBound {
			if _, ok := g.waitEntered(ctx, ended); !ok {
				break
			}
			n++
		}
		entered <- n
		cancel()
	}()
	got, err := e.hostEval(cctx, ev, "host_concurrent", fmt.Appendf(nil, `{"n":%d}`, hostConcStopCalls), limits, effect.HostFuncs{"wait": g.fn})
	close(ended)
	n := <-entered
	if n < hostConcBound {
		e.failf("only %d host call(s) were in flight before the run was cancelled; %d expected", n, hostConcBound)
		return nil
	}
	if !errors.Is(err, context.Canceled) {
		e.failf("a run cancelled with host calls in flight must return context.Canceled, got %s", describe(got, err))
	}
	t := time.NewTimer(e.k.grace)
	defer t.Stop()
	for i := range hostConcBound {
		select {
		case <-g.ctxDone:
		case <-t.C:
			e.failf("%d of the %d running host calls' contexts were not done within %v of the run's end", hostConcBound-i, hostConcBound, e.k.grace)
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	return g
}
