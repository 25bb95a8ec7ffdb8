package conformance

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// The logs case's fixed texts (see the fixture contract in package
// fixtures): the first line exactly, the second's start (it is oversized),
// the third's start and end around its control characters and lone
// surrogate, and the failing run's message.
const (
	logsLineOne     = "logs: one ✓"
	logsLineTwo     = "logs: two "
	logsLineThree   = "logs: three "
	logsLineThreeTo = " end"
	logsFailure     = "logs: failed"
	// logsOversized is how many "x" the second line of the logs fixture
	// holds after its prefix: far past record.MaxLogLineUnits.
	logsOversized = 100_000
)

func needLogs(c spi.Capabilities) string {
	if c.Logs {
		return ""
	}
	return "gated by Logs: the backend does not declare that it delivers what the script logs"
}

// recorder is what the logs case needs of an effect beyond evaluator: the
// run's record.
type recorder interface {
	Run(ctx context.Context, call effect.Call) (*effect.Record, error)
}

// Run implements recorder.
func (a effectEvaluator) Run(ctx context.Context, call effect.Call) (*effect.Record, error) {
	return a.e.Run(ctx, call)
}

// caseLogs runs the logs fixture three times: finishing, failing after
// logging, and under a log bound of two lines. Each run's record must hold
// the script's lines in order, with levels and streams that agree, the
// oversized one cut with the marker and the control characters and lone
// surrogate made storable; a failing run's lines are delivered too, and a
// full log cuts with the marker without changing the result.
func caseLogs(ctx context.Context, e *env) {
	rec, addr, ok := e.recorded("logs", nil)
	if !ok {
		return
	}

	r, err := rec.Run(ctx, effect.Call{Script: addr, Input: rawJSON([]byte(`{"fail":false}`)), Limits: e.k.limits})
	switch {
	case err != nil || r == nil:
		e.failf("the logs script must finish with a value, got %s", describe(nil, err))
		return
	case string(r.Value) != "3":
		e.failf("the logs script must return 3, got %s", clip(string(r.Value)))
	}
	if !checkLogLines(e, "the finishing run", r) {
		return
	}
	e.figure("lines", float64(len(r.Logs)), "lines", "==", 3)

	r, err = rec.Run(ctx, effect.Call{Script: addr, Input: rawJSON([]byte(`{"fail":true}`)), Limits: e.k.limits})
	f, typed := asFailure(err)
	switch {
	case !typed || f.Code != record.CodeScriptError || !strings.Contains(f.Message, logsFailure):
		e.failf("the failing logs run must end in a typed scriptError containing %q, got %s", logsFailure, describe(nil, err))
		return
	case r == nil:
		e.failf("a failed run must have a record")
		return
	}
	if !checkLogLines(e, "the failing run", r) {
		return
	}

	// Under a bound of two lines: the third is cut, and the run is the
	// same.
	ev, ok := e.setup(e.k.limits, func(o *effect.Options) { o.MaxLogLines = 2 })
	if !ok {
		return
	}
	r, err = ev.(recorder).Run(ctx, effect.Call{Script: addr, Input: rawJSON([]byte(`{"fail":false}`)), Limits: e.k.limits})
	switch {
	case err != nil || r == nil || string(r.Value) != "3":
		e.failf("with MaxLogLines 2 the logs script must still return 3, got %s", describe(nil, err))
	case len(r.Logs) != 2 || r.LogsCut == nil || r.LogsCut.Lines != 1:
		e.failf("with MaxLogLines 2 the record must keep 2 lines and mark 1 cut, got %d lines, cut %+v", len(r.Logs), r.LogsCut)
	}
}

// checkLogLines checks a logs run's three lines.
func checkLogLines(e *env, run string, r *effect.Record) bool {
	if len(r.Logs) != 3 {
		texts := make([]string, 0, len(r.Logs))
		for _, l := range r.Logs {
			texts = append(texts, clip(l.Text))
		}
		e.failf("%s must log exactly 3 lines, in order, got %d: %q", run, len(r.Logs), texts)
		return false
	}
	ok := true
	bad := func(format string, args ...any) {
		e.failf("%s: %s", run, fmt.Sprintf(format, args...))
		ok = false
	}
	one, two, three := r.Logs[0], r.Logs[1], r.Logs[2]
	if one.Text != logsLineOne {
		bad("line 1 must be %q, got %q", logsLineOne, clip(one.Text))
	}
	if one.Level != spi.LevelInfo || one.Stream != spi.StreamStdout {
		bad("line 1 must be info on stdout (the language's plain print), got %s on %s", one.Level, one.Stream)
	}
	for i, l := range r.Logs {
		onStdout := l.Level == spi.LevelDebug || l.Level == spi.LevelInfo
		if onStdout != (l.Stream == spi.StreamStdout) {
			bad("line %d: level %s on stream %s: debug and info go to stdout, warn and error to stderr", i+1, l.Level, l.Stream)
		}
	}
	units := len(utf16.Encode([]rune(two.Text)))
	marker := "…[truncated]"
	switch {
	case !strings.HasPrefix(two.Text, logsLineTwo+"xxxx"):
		bad("line 2 must start with %q and x's, got %q", logsLineTwo, clip(two.Text))
	case !strings.HasSuffix(two.Text, marker):
		bad("line 2 (%d characters) must be cut with the marker %q, got %d units ending %q", len(logsLineTwo)+logsOversized, marker, units, clip(two.Text[max(0, len(two.Text)-40):]))
	case units > record.MaxLogLineUnits+markerAllowance:
		bad("line 2 must be bounded to %d units plus the marker, got %d", record.MaxLogLineUnits, units)
	}
	mid, found := strings.CutPrefix(three.Text, logsLineThree)
	mid, found2 := strings.CutSuffix(mid, logsLineThreeTo)
	if !found || !found2 || (mid != "\uFFFD\uFFFD\uFFFD" && mid != "\uFFFD\uFFFD") {
		bad("line 3 must be %q, a U+FFFD for each of BEL, ESC and the lone surrogate, then %q, got %+q", logsLineThree, logsLineThreeTo, clip(three.Text))
	}
	return ok
}

// logsOrderLines is how many lines logs_order logs: past a ring of a
// thousand lines, and the effect's default MaxLogLines, which the case
// raises to hold them all.
const logsOrderLines = 1500

// caseLogsOrder runs logs_order: many lines, each naming the level of
// the call that logged it, cycling through the language's levels and
// alternating its streams. The record must hold every line, in order (no
// early line dropped, stdout and stderr not reordered), each with the
// level of its call (not one taken from its stream) on that level's
// stream.
func caseLogsOrder(ctx context.Context, e *env) {
	rec, addr, ok := e.recorded("logs_order", func(o *effect.Options) {
		o.MaxLogLines = logsOrderLines
		o.MaxLogBytes = max(o.MaxLogBytes, effect.DefaultMaxLogBytes)
	})
	if !ok {
		return
	}
	r, err := rec.Run(ctx, effect.Call{Script: addr, Input: rawJSON(fmt.Appendf(nil, `{"n":%d}`, logsOrderLines)), Limits: e.k.limits})
	if err != nil || r == nil {
		e.failf("the logs_order script must finish, got %s", describe(nil, err))
		return
	}
	e.figure("lines", float64(len(r.Logs)), "lines", "==", logsOrderLines)
	levels := map[spi.LogLevel]bool{}
	switches := 0
	for i, l := range r.Logs {
		var n int
		var name string
		if _, err := fmt.Sscanf(l.Text, "order %d %s", &n, &name); err != nil || n != i {
			e.failf("line %d of %d must be %q: got %q (a line lost, or out of order)", i+1, len(r.Logs), fmt.Sprintf("order %d LEVEL", i), clip(l.Text))
			return
		}
		var want spi.LogLevel
		if err := want.UnmarshalText([]byte(name)); err != nil {
			e.failf("line %d names no level: %q", i+1, clip(l.Text))
			return
		}
		if l.Level != want {
			e.failf("line %d was logged at level %s, the record says %s: a line's level is its call's, not its stream's", i+1, want, l.Level)
			return
		}
		if onStdout := want == spi.LevelDebug || want == spi.LevelInfo; onStdout != (l.Stream == spi.StreamStdout) {
			e.failf("line %d: level %s on stream %s: debug and info go to stdout, warn and error to stderr", i+1, l.Level, l.Stream)
			return
		}
		levels[l.Level] = true
		if i > 0 && l.Stream != r.Logs[i-1].Stream {
			switches++
		}
	}
	e.figure("levels", float64(len(levels)), "levels", "", 0)
	e.figure("streamSwitches", float64(switches), "switches", "", 0)
	if len(r.Logs) != logsOrderLines {
		e.failf("the record must hold all %d lines, in order, got the first %d: the lines after them were lost", logsOrderLines, len(r.Logs))
	}
}

// recorded sets up an effect (tweaked by tweak) that returns run records,
// and the fixture stem's script in it; ok is false, the failure
// reported, when either cannot be had.
func (e *env) recorded(stem string, tweak func(*effect.Options)) (rec recorder, addr record.Address, ok bool) {
	ev, ok := e.setup(e.k.limits, tweak)
	if !ok {
		return nil, addr, false
	}
	rec, isRecorder := ev.(recorder)
	if !isRecorder {
		e.failf("the effect in front of the backend returns no run record")
		return nil, addr, false
	}
	addr, _, err := e.script(stem)
	if err != nil {
		e.failf("preparing fixture %s%s: %v", stem, e.k.set.Ext, err)
		return nil, addr, false
	}
	return rec, addr, true
}
