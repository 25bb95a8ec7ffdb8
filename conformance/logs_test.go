package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/spi"
)

// logsLine is one line a fake logs behaviour writes.
type logsLine struct {
	level  spi.LogLevel
	stream spi.LogStream
	text   string
}

// logsGood is what the logs fixture logs on a well-behaved engine.
var logsGood = []logsLine{
	{spi.LevelInfo, spi.StreamStdout, logsLineOne},
	{spi.LevelWarn, spi.StreamStderr, logsLineTwo + strings.Repeat("x", logsOversized)},
	{spi.LevelError, spi.StreamStderr, logsLineThree + "\x07\x1b\xed\xa0\x80" + logsLineThreeTo},
}

// logsBehavior acts out the logs fixture, writing lines to the request's
// sink.
func logsBehavior(lines []logsLine) behavior {
	return func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		var in struct{ Fail bool }
		_ = json.Unmarshal(req.Input, &in)
		for _, l := range lines {
			req.Log(l.level, l.stream, l.text)
		}
		if in.Fail {
			return spi.Threw("Error", logsFailure), nil
		}
		return spi.OK(json.RawMessage(`3`)), nil
	}
}

func init() { goodBehaviors["logs_order"] = logsOrderBehavior(orderHonest) }

// logsOrder says how a fake delivers logs_order's lines.
type logsOrder int

const (
	orderHonest       logsOrder = iota
	orderLevelStream            // the level taken from the stream
	orderRing                   // only the last thousand lines kept
	orderStreamsApart           // stdout's lines, then stderr's
)

// logsOrderBehavior acts out logs_order: n lines cycling info, error,
// debug and warn, delivered as how says.
func logsOrderBehavior(how logsOrder) behavior {
	return func(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
		var in struct{ N int }
		_ = json.Unmarshal(req.Input, &in)
		cycle := []logsLine{{spi.LevelInfo, spi.StreamStdout, "info"}, {spi.LevelError, spi.StreamStderr, "error"},
			{spi.LevelDebug, spi.StreamStdout, "debug"}, {spi.LevelWarn, spi.StreamStderr, "warn"}}
		var lines, stderr []logsLine
		for i := range in.N {
			l := cycle[i%len(cycle)]
			l.text = fmt.Sprintf("order %d %s", i, l.text)
			switch {
			case how == orderLevelStream && l.stream == spi.StreamStdout:
				l.level = spi.LevelInfo
			case how == orderLevelStream:
				l.level = spi.LevelError
			case how == orderStreamsApart && l.stream == spi.StreamStderr:
				stderr = append(stderr, l)
				continue
			}
			lines = append(lines, l)
		}
		lines = append(lines, stderr...)
		if how == orderRing && len(lines) > 1000 {
			lines = lines[len(lines)-1000:]
		}
		for _, l := range lines {
			req.Log(l.level, l.stream, l.text)
		}
		return spi.OK(json.RawMessage(fmt.Sprint(in.N))), nil
	}
}

// Every way of getting the logs wrong fails the case, with its reason.
func TestLogsCaseFailsBrokenBackends(t *testing.T) {
	g := logsGood
	tests := []struct {
		name   string
		b      behavior
		reason string
	}{
		{"no lines", logsBehavior(nil), "must log exactly 3 lines, in order, got 0"},
		{"a line lost", logsBehavior(g[:2]), "must log exactly 3 lines"},
		{"order broken", logsBehavior([]logsLine{g[1], g[0], g[2]}), `line 1 must be "logs: one ✓"`},
		{"level and stream disagree", logsBehavior([]logsLine{g[0], {spi.LevelWarn, spi.StreamStdout, g[1].text}, g[2]}),
			"line 2: level warn on stream stdout"},
		{"plain print not info", logsBehavior([]logsLine{{spi.LevelDebug, spi.StreamStdout, g[0].text}, g[1], g[2]}),
			"line 1 must be info on stdout"},
		{"a control character dropped", logsBehavior([]logsLine{g[0], g[1], {spi.LevelError, spi.StreamStderr, logsLineThree + "\x07" + logsLineThreeTo}}),
			"line 3 must be"},
		{"oversized line shortened by the engine", logsBehavior([]logsLine{g[0], {spi.LevelWarn, spi.StreamStderr, logsLineTwo + "xxxxx"}, g[2]}),
			"must be cut with the marker"},
		{"failed run loses its logs", func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
			var in struct{ Fail bool }
			_ = json.Unmarshal(req.Input, &in)
			if in.Fail {
				return spi.Threw("Error", logsFailure), nil
			}
			return logsBehavior(g)(ctx, f, req)
		}, "the failing run must log exactly 3 lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := newFakeConfig()
			cfg.override["logs"] = tt.b
			rep := check(t, cfg, &Options{Cases: []string{"logs"}})
			r := result(t, rep, "logs")
			assert.Equal(t, StatusFail, r.Status)
			assert.Contains(t, r.Reason, tt.reason)
		})
	}
}

// A backend that does not declare Logs is skipped, with the reason.
func TestLogsCaseGated(t *testing.T) {
	cfg := newFakeConfig()
	cfg.caps.Logs = false
	rep := check(t, cfg, &Options{Cases: []string{"logs"}})
	r := result(t, rep, "logs")
	assert.Equal(t, StatusSkip, r.Status)
	assert.Contains(t, r.Reason, "gated by Logs")
}
