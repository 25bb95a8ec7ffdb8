package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// The deterministic case proves Capabilities.Deterministic: the run's host
// calls and value depend only on the script, its input and the answers,
// and so a run suspended at a host call resumes, by replay, to the value
// a run answered live gives (docs/design.md, "Durable runs").

func needDeterministic(c spi.Capabilities) string {
	if r := needHostCalls(c); r != "" {
		return r
	}
	if c.Deterministic {
		return ""
	}
	return "gated by Deterministic: the backend does not declare deterministic runs"
}

// deterministicRuns is how many live runs of durable_replay the case
// makes at once.
const deterministicRuns = 3

// ticketLog records durable_replay's host calls and answers them from
// their arguments alone: a ticket holds its call's arguments; an approval
// is true, or Suspend when suspend is set.
type ticketLog struct {
	mu      sync.Mutex
	calls   []record.HostCall
	suspend bool
}

func (l *ticketLog) funcs() effect.HostFuncs {
	answer := func(name string, args json.RawMessage, v any) (any, error) {
		text, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, record.HostCall{Name: name, Args: append(json.RawMessage(nil), args...), Outcome: record.HostCallOK, Answer: text})
		return json.RawMessage(text), nil
	}
	return effect.HostFuncs{
		"ticket": func(_ context.Context, args json.RawMessage) (any, error) {
			return answer("ticket", args, map[string]any{"ticket": args})
		},
		"approve": func(_ context.Context, args json.RawMessage) (any, error) {
			if l.suspend {
				return nil, effect.Suspend("conformance: waiting for an approval")
			}
			return answer("approve", args, true)
		},
	}
}

func (l *ticketLog) list() []record.HostCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]record.HostCall(nil), l.calls...)
}

// sameCalls describes how two lists of calls differ, or returns "".
func sameCalls(want, got []record.HostCall) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d host calls, not %d", len(got), len(want))
	}
	for i := range want {
		if want[i].Name != got[i].Name {
			return fmt.Sprintf("call %d is %q, not %q", i+1, got[i].Name, want[i].Name)
		}
		if d := jsonDiff(want[i].Args, got[i].Args); d != "" {
			return fmt.Sprintf("call %d's arguments differ: %s", i+1, d)
		}
	}
	return ""
}

// caseDeterministic: durable_replay, run several times at once with the
// same input, makes the same calls and gives the same value; a durable
// run suspended at the approval ends suspended; and a durable run
// answered from the live run's log up to the approval calls the host
// function only for what follows and gives the live value.
func caseDeterministic(ctx context.Context, e *env) {
	ev, s, ok := e.hostSetup(e.k.limits, nil)
	if !ok {
		return
	}
	defer e.checkLate(s)
	in := fmt.Appendf(nil, `{"nonce":%q}`, newNonce())
	addr, _, err := e.script("durable_replay")
	if err != nil {
		e.failf("preparing fixture durable_replay%s: %v", e.k.set.Ext, err)
		return
	}
	call := func(l *ticketLog, d *effect.Durable) ([]byte, error) {
		return ev.Evaluate(ctx, effect.Call{Script: addr, Input: rawJSON(in), Limits: e.k.limits, Host: l.funcs(), Durable: d})
	}

	logs := make([]*ticketLog, deterministicRuns)
	values := make([][]byte, deterministicRuns)
	errs := make([]error, deterministicRuns)
	var wg sync.WaitGroup
	for i := range logs {
		logs[i] = &ticketLog{}
		wg.Go(func() { values[i], errs[i] = call(logs[i], nil) })
	}
	wg.Wait()
	for i := range logs {
		if errs[i] != nil {
			e.failf("durable_replay must give a value, got %s", describe(values[i], errs[i]))
			return
		}
	}
	live := logs[0].list()
	if len(live) != 3 {
		e.failf("durable_replay makes 3 host calls; the host functions were called %d time(s)", len(live))
		return
	}
	for i := 1; i < deterministicRuns; i++ {
		if d := sameCalls(live, logs[i].list()); d != "" {
			e.failf("the same script, input and answers must make the same host calls (a real clock or real randomness reached the script?): run %d: %s", i+1, d)
			return
		}
		if d := jsonDiff(values[0], values[i]); d != "" {
			e.failf("the same script, input and answers must give the same value (a real clock or real randomness reached the script?): run %d: %s", i+1, d)
			return
		}
	}
	e.figure("deterministicRuns", deterministicRuns, "runs", "==", deterministicRuns)

	durable := func(replay ...record.HostCall) *effect.Durable {
		return &effect.Durable{Replay: replay, MaxSuspensions: 1, MaxLogBytes: 1 << 20}
	}
	got, err := call(&ticketLog{suspend: true}, durable())
	if !errors.Is(err, effect.ErrSuspended) {
		e.failf("a durable run whose host function answers Suspend must end suspended, got %s", describe(got, err))
		return
	}
	replayed := &ticketLog{}
	got, err = call(replayed, durable(live[:2]...))
	if err != nil {
		e.failf("a durable run answered from the live run's log must give its value, got %s", describe(got, err))
		return
	}
	if d := jsonDiff(values[0], got); d != "" {
		e.failf("a durable run answered from the live run's log must give its value: %s", d)
	}
	if n := len(replayed.list()); n != 1 {
		e.failf("a durable run answered from the log must call the host functions only past it: called %d time(s), not once", n)
	}
}
