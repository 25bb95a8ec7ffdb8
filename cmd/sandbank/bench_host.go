package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

// The host-call section of "sandbank bench": the round trip of one host
// call, script to host function and back, per engine.

// hostCallRuns is how many runs of the host_loop fixture the section
// makes per engine; each makes effect.DefaultMaxHostCalls calls and ends
// with limitExceeded (hostCalls), as the fixture is meant to.
const hostCallRuns = 3

// hostCallFigures are an engine's host-call round trip: the time between
// the arrivals of consecutive calls of one run at the host function (the
// script's loop, the engine's relay, the effect's broker and back), in
// microseconds.
type hostCallFigures struct {
	NA      string  `json:"na,omitempty"`
	Samples int     `json:"samples"`
	P50us   float64 `json:"p50_us"`
	P99us   float64 `json:"p99_us"`
}

// measureHostCalls runs the host_loop fixture hostCallRuns times.
func (a *app) measureHostCalls(ctx context.Context, e *benchEngine) *hostCallFigures {
	switch {
	case e.eff == nil:
		return &hostCallFigures{NA: "engine not built"}
	case !e.eff.Capabilities().HostCalls:
		return &hostCallFigures{NA: "the engine does not declare host calls"}
	}
	set, ok := a.fixtures(e.entry.Language)
	if !ok {
		return &hostCallFigures{NA: "no fixture set for language " + e.entry.Language}
	}
	script, err := set.Script("host_loop")
	if err != nil {
		return &hostCallFigures{NA: "no host_loop fixture"}
	}
	var samples []time.Duration
	for range hostCallRuns {
		var mu sync.Mutex
		var last time.Time
		probe := func(context.Context, json.RawMessage) (any, error) {
			now := time.Now()
			mu.Lock()
			if !last.IsZero() {
				samples = append(samples, now.Sub(last))
			}
			last = now
			mu.Unlock()
			return json.RawMessage("1"), nil
		}
		_, err := e.eff.Evaluate(ctx, effect.Call{Source: script, Input: json.RawMessage(`{"a":1}`), Limits: defaultLimits,
			Host: effect.HostFuncs{"probe": probe}})
		var f *effect.Failure
		if !errors.As(err, &f) || f.Kind != record.LimitHostCalls {
			e.addError(fmt.Sprintf("host calls: host_loop must end in limitExceeded hostCalls, got %v", err))
			return &hostCallFigures{NA: "host_loop failed"}
		}
	}
	if len(samples) == 0 {
		return &hostCallFigures{NA: "no samples"}
	}
	return &hostCallFigures{Samples: len(samples), P50us: micros(percentile(samples, 0.50)), P99us: micros(percentile(samples, 0.99))}
}

// printHostCalls prints the host-call section of the table, fitted to
// width.
func printHostCalls(w io.Writer, width int, r *benchReport) error {
	head := []string{"ENGINE", "HOST CALL p50 µs", "HOST CALL p99 µs", "SAMPLES"}
	var rows [][]string
	var notes []string
	for _, e := range r.Engines {
		h := e.HostCall
		if h == nil {
			continue
		}
		if h.NA != "" {
			rows = append(rows, []string{e.Engine, "n/a", "n/a", "-"})
			notes = append(notes, fmt.Sprintf("%s host call: n/a (%s)", e.Engine, h.NA))
			continue
		}
		rows = append(rows, []string{e.Engine, fmt.Sprintf("%.1f", h.P50us), fmt.Sprintf("%.1f", h.P99us), fmt.Sprint(h.Samples)})
	}
	if err := writeFitted(w, width, head, rows); err != nil {
		return err
	}
	writeWrappedTo(w, width, "", fmt.Sprintf("host call: µs between consecutive calls of one run at the host function (host_loop, %d calls per run, %d runs).", effect.DefaultMaxHostCalls, hostCallRuns))
	for _, n := range notes {
		writeWrappedTo(w, width, "  ", n)
	}
	return nil
}
