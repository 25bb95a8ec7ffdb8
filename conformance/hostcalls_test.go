package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/spi"
)

// hostCaseNames are the cases gated by HostCalls.
var hostCaseNames = []string{"host_calls", "host_errors", "host_limits", "host_stop", "host_stuck", "host_isolation", "host_clock", "host_exact", "host_concurrent"}

// hostWrapper puts a broken relay in front of goja's.
type hostWrapper struct {
	*goja.Backend
	evaluate func(ctx context.Context, b *goja.Backend, req spi.Request) (spi.Outcome, error)
}

func (w *hostWrapper) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	return w.evaluate(ctx, w.Backend, req)
}

func hostFactory(evaluate func(ctx context.Context, b *goja.Backend, req spi.Request) (spi.Outcome, error)) spi.Factory {
	return func() (spi.Backend, error) {
		b, err := goja.New(nil)
		if err != nil {
			return nil, err
		}
		if evaluate == nil {
			return b, nil
		}
		return &hostWrapper{Backend: b, evaluate: evaluate}, nil
	}
}

// localHost answers every call itself, never asking the broker.
type localHost struct{}

func (localHost) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if name == "fails" {
		return nil, errors.New(`"made up"`)
	}
	return args, nil
}

func runHostCases(t *testing.T, f spi.Factory) *Report {
	t.Helper()
	rep, err := Check(context.Background(), f, &Options{Cases: hostCaseNames})
	require.NoError(t, err)
	return rep
}

// gojaSkips are the host cases goja's declaration or its fixture set
// skips: host_clock times a hard wall clock (goja's is soft), and
// JavaScript's doubles cannot hold host_exact's integers.
var gojaSkips = map[string]string{"host_clock": "gated by WallClock hard", "host_exact": "the javascript fixture set declares"}

func TestHostCasesPassOnAnHonestRelay(t *testing.T) {
	rep := runHostCases(t, hostFactory(nil))
	for _, c := range rep.Cases {
		if gojaSkips[c.Name] != "" {
			assert.Equal(t, StatusSkip, c.Status, c.Name)
			assert.Contains(t, c.Reason, gojaSkips[c.Name], c.Name)
			continue
		}
		assert.Equal(t, StatusPass, c.Status, "%s: %s", c.Name, c.Reason)
	}
	var proof *Proof
	for i := range rep.Proofs {
		if rep.Proofs[i].Capability == "hostCalls" {
			proof = &rep.Proofs[i]
		}
	}
	require.NotNil(t, proof, "hostCalls is a proven capability")
	assert.True(t, proof.Proven, "%v", proof.By)
}

func TestHostCasesCatchBrokenRelays(t *testing.T) {
	for _, tc := range []struct {
		name     string
		evaluate func(ctx context.Context, b *goja.Backend, req spi.Request) (spi.Outcome, error)
		reason   map[string]string // case → text its failure must hold
	}{
		{"answers without calling the broker", func(ctx context.Context, b *goja.Backend, req spi.Request) (spi.Outcome, error) {
			if req.Host != nil {
				req.Host = localHost{}
			}
			return b.Evaluate(ctx, req)
		}, map[string]string{
			"host_calls":      "the host function was called 0 time(s)",
			"host_errors":     "the host function was called 0 time(s)",
			"host_limits":     "limitExceeded hostCalls",
			"host_stop":       "never called",
			"host_stuck":      "never called",
			"host_isolation":  "its own host function was called 0 time(s)",
			"host_concurrent": "only 0 host call(s) were in flight",
		}},
		{"calls the broker after the run ended", func(ctx context.Context, b *goja.Backend, req spi.Request) (spi.Outcome, error) {
			out, err := b.Evaluate(ctx, req)
			if req.Host != nil {
				// Once the run's context is done the effect has ended the
				// run (it ends the broker first); calling at once could
				// still land inside the run, before Evaluate's return
				// reached the effect.
				go func() {
					<-ctx.Done()
					_, _ = req.Host.Call(context.Background(), "probe", json.RawMessage(`1`))
				}()
			}
			return out, err
		}, map[string]string{
			"host_calls":      "after its run ended",
			"host_errors":     "after its run ended",
			"host_limits":     "after its run ended",
			"host_stop":       "after its run ended",
			"host_stuck":      "after its run ended",
			"host_isolation":  "after its run ended",
			"host_concurrent": "after its run ended",
		}},
		{"declares host calls but gives the script none", func(ctx context.Context, b *goja.Backend, req spi.Request) (spi.Outcome, error) {
			req.Host = nil
			return b.Evaluate(ctx, req)
		}, map[string]string{
			"host_calls":      "two host calls must give the second answer",
			"host_errors":     "host function was called 0 time(s)",
			"host_limits":     "limitExceeded hostCalls",
			"host_stop":       "never called",
			"host_stuck":      "never called",
			"host_isolation":  "must give the run's own second answer, got typed scriptError",
			"host_concurrent": "only 0 host call(s) were in flight",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := runHostCases(t, hostFactory(tc.evaluate))
			require.Len(t, rep.Cases, len(hostCaseNames))
			for _, c := range rep.Cases {
				if gojaSkips[c.Name] != "" {
					assert.Equal(t, StatusSkip, c.Status, c.Name)
					continue
				}
				assert.Equal(t, StatusFail, c.Status, "%s must fail: %s", c.Name, c.Reason)
				assert.True(t, strings.Contains(c.Reason, tc.reason[c.Name]), "%s: want %q in %q", c.Name, tc.reason[c.Name], c.Reason)
			}
		})
	}
}

func TestHostCasesGated(t *testing.T) {
	c := newFakeConfig()
	c.caps.HostCalls = false
	rep, err := Check(context.Background(), c.factory(), &Options{Cases: hostCaseNames})
	require.NoError(t, err)
	for _, r := range rep.Cases {
		assert.Equal(t, StatusSkip, r.Status, r.Name)
		assert.Contains(t, r.Reason, "gated by HostCalls")
	}
}

// The good fake's host behaviours act out the host_* scripts through the
// broker, as an engine relays a script's calls.
func init() {
	goodBehaviors["host_calls"] = hostCallsBehavior
	goodBehaviors["durable_replay"] = durableReplayBehavior
	goodBehaviors["host_error"] = hostErrorBehavior
	goodBehaviors["host_loop"] = hostLoopBehavior
	goodBehaviors["host_concurrent"] = hostConcurrentBehavior
	goodBehaviors["host_clock"] = hostClockBehavior(false)
}

// hostClockBehavior acts out host_clock: one call, then a loop stopped by
// the wall clock counted from the run's start, or (paused) counted
// without the time the call was out, as a backend whose clock stands
// still during host calls.
func hostClockBehavior(paused bool) behavior {
	return func(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		if req.Host == nil {
			return spi.Threw("ReferenceError", "host is not defined"), nil
		}
		start := time.Now()
		if _, err := req.Host.Call(ctx, "probe", req.Input); err != nil {
			return hostThrew(ctx, err)
		}
		deadline := start.Add(req.Limits.WallClock)
		if paused {
			deadline = deadline.Add(time.Since(start))
		}
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-t.C:
			return spi.Limited(spi.LimitWallClock), nil
		case <-ctx.Done():
			return spi.Outcome{}, ctx.Err()
		}
	}
}

// sharedBroker acts out host_calls through the broker of the latest run
// on the instance, not each run's own.
func sharedBroker() behavior {
	var mu sync.Mutex
	var latest spi.Host
	return func(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		mu.Lock()
		latest = req.Host
		mu.Unlock()
		host := func() spi.Host {
			mu.Lock()
			defer mu.Unlock()
			return latest
		}
		first, err := host().Call(ctx, "probe", req.Input)
		if err != nil {
			return hostThrew(ctx, err)
		}
		second, err := host().Call(ctx, "probe", first)
		if err != nil {
			return hostThrew(ctx, err)
		}
		return spi.OK(second), nil
	}
}

// roundedHost acts out host_calls decoding each answer into float64s, as
// a backend that passes host answers through a Go any does.
func roundedHost(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	round := func(text json.RawMessage) json.RawMessage {
		var v any
		if json.Unmarshal(text, &v) != nil {
			return text
		}
		b, _ := json.Marshal(v)
		return b
	}
	first, err := req.Host.Call(ctx, "probe", req.Input)
	if err != nil {
		return hostThrew(ctx, err)
	}
	second, err := req.Host.Call(ctx, "probe", round(first))
	if err != nil {
		return hostThrew(ctx, err)
	}
	return spi.OK(round(second)), nil
}

// awaitsEveryAnswer acts out host_calls issuing each call with Start and
// waiting for its answer whatever its context says, as an engine that
// drains its pending promises before it returns.
func awaitsEveryAnswer(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	hs, ok := req.Host.(spi.HostStarter)
	if !ok {
		return spi.Threw("ReferenceError", "host is not defined"), nil
	}
	call := func(args json.RawMessage) (json.RawMessage, error) {
		type answer struct {
			text json.RawMessage
			err  error
		}
		ch := make(chan answer, 1)
		hs.Start(ctx, "probe", args, func(text json.RawMessage, err error) { ch <- answer{text, err} })
		a := <-ch
		return a.text, a.err
	}
	first, err := call(req.Input)
	if err != nil {
		return hostThrew(ctx, err)
	}
	second, err := call(first)
	if err != nil {
		return hostThrew(ctx, err)
	}
	return spi.OK(second), nil
}

// hostConcurrentBehavior issues every call at once through the broker's
// Start, in order, and returns the answers in that order.
func hostConcurrentBehavior(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	hs, ok := req.Host.(spi.HostStarter)
	if !ok {
		return spi.Threw("ReferenceError", "host is not defined"), nil
	}
	var in struct{ N int }
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return spi.Threw("TypeError", "bad input"), nil
	}
	type answer struct {
		i    int
		text json.RawMessage
		err  error
	}
	got := make(chan answer, in.N)
	for i := range in.N {
		hs.Start(ctx, "wait", json.RawMessage(strconv.Itoa(i)), func(text json.RawMessage, err error) { got <- answer{i, text, err} })
	}
	out := make([]json.RawMessage, in.N)
	for range in.N {
		select {
		case a := <-got:
			if a.err != nil {
				return hostThrew(ctx, a.err)
			}
			out[a.i] = a.text
		case <-ctx.Done():
			return spi.Outcome{}, ctx.Err()
		}
	}
	text, _ := json.Marshal(out)
	return spi.OK(text), nil
}

// callOnly hides the broker's Start: the backend relays one call at a
// time.
type callOnly struct{ spi.Host }

// A backend that waits for each answer before relaying the next call
// fails host_concurrent and nothing else.
func TestHostConcurrentCatchesOneAtATime(t *testing.T) {
	rep, err := Check(context.Background(), hostFactory(func(ctx context.Context, b *goja.Backend, req spi.Request) (spi.Outcome, error) {
		if req.Host != nil {
			req.Host = callOnly{req.Host}
		}
		return b.Evaluate(ctx, req)
	}), &Options{Cases: []string{"host_calls", "host_concurrent"}})
	require.NoError(t, err)
	require.Len(t, rep.Cases, 2)
	assert.Equal(t, StatusPass, rep.Cases[0].Status, rep.Cases[0].Reason)
	assert.Equal(t, StatusFail, rep.Cases[1].Status)
	assert.Contains(t, rep.Cases[1].Reason, "only 1 host call(s) were in flight")
}

// hostThrew is what an engine reports for a host error the script did not
// catch, or the stop the broker asked for.
func hostThrew(ctx context.Context, err error) (spi.Outcome, error) {
	if ctx.Err() != nil {
		return spi.Outcome{}, ctx.Err()
	}
	return spi.Threw("Error", err.Error()), nil
}

func hostCallsBehavior(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	if req.Host == nil {
		return spi.Threw("ReferenceError", "host is not defined"), nil
	}
	first, err := req.Host.Call(ctx, "probe", req.Input)
	if err != nil {
		return hostThrew(ctx, err)
	}
	second, err := req.Host.Call(ctx, "probe", first)
	if err != nil {
		return hostThrew(ctx, err)
	}
	return spi.OK(second), nil
}

func hostErrorBehavior(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	if req.Host == nil {
		return spi.Threw("ReferenceError", "host is not defined"), nil
	}
	var message json.RawMessage = json.RawMessage("null")
	if _, err := req.Host.Call(ctx, "fails", req.Input); err != nil {
		message, _ = json.Marshal(err.Error())
	}
	_, err := req.Host.Call(ctx, "fails", message)
	if err == nil {
		return spi.OK(json.RawMessage("null")), nil
	}
	return hostThrew(ctx, err)
}

func hostLoopBehavior(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	if req.Host == nil {
		return spi.Threw("ReferenceError", "host is not defined"), nil
	}
	for {
		if _, err := req.Host.Call(ctx, "probe", req.Input); err != nil {
			return hostThrew(ctx, err)
		}
	}
}

// durableReplayBehavior is durable_replay on a deterministic engine: its
// clock and random numbers are fixed sequences, so the same input and
// answers give the same calls and value.
func durableReplayBehavior(ctx context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	if req.Host == nil {
		return spi.Threw("ReferenceError", "host is not defined"), nil
	}
	clock, random := int64(946684800000), 0.0
	now := func() int64 { clock++; return clock }
	draw := func() float64 { random += 0.125; return random }
	t1, err := req.Host.Call(ctx, "ticket", mustJSON(map[string]any{"at": now(), "r": draw(), "input": req.Input}))
	if err != nil {
		return hostThrew(ctx, err)
	}
	ok, err := req.Host.Call(ctx, "approve", t1)
	if err != nil {
		return hostThrew(ctx, err)
	}
	t2, err := req.Host.Call(ctx, "ticket", mustJSON(map[string]any{"at": now(), "r": draw(), "after": t1}))
	if err != nil {
		return hostThrew(ctx, err)
	}
	return spi.OK(mustJSON(map[string]any{"t1": t1, "ok": ok, "t2": t2, "at": now(), "r": draw()})), nil
}

// mustJSON is v as JSON text; v is the test's own, so it always encodes.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
