package goja_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// sink keeps what a backend logs; it is full after max lines (0: never).
type sink struct {
	mu    sync.Mutex
	lines []record.LogLine
	calls int
	max   int
}

func (s *sink) Log(level spi.LogLevel, stream spi.LogStream, text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.max > 0 && len(s.lines) >= s.max {
		return false
	}
	s.lines = append(s.lines, record.LogLine{Level: level, Stream: stream, Text: text})
	return s.max == 0 || len(s.lines) < s.max
}

func evalLogged(t *testing.T, script string, s *sink) spi.Outcome {
	t.Helper()
	out, err := newBackend(t, nil).Evaluate(context.Background(), spi.Request{
		Script: []byte(script), Input: json.RawMessage(`null`), Limits: spi.Limits{WallClock: longClock}, Logs: s})
	require.NoError(t, err)
	return out
}

// Each console method writes one line at its level, on its stream, in the
// order of the calls; arguments are joined by spaces.
func TestConsoleLevelsAndStreams(t *testing.T) {
	s := &sink{}
	out := evalLogged(t, `console.log("a", 1, true, null); console.info("i"); console.debug("d");
		console.warn("w"); console.error("e"); console.trace("t"); print("p"); 7`, s)
	assert.Equal(t, spi.KindOK, out.Kind)
	type l = record.LogLine
	assert.Equal(t, []l{
		{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "a 1 true null"},
		{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "i"},
		{Level: spi.LevelDebug, Stream: spi.StreamStdout, Text: "d"},
		{Level: spi.LevelWarn, Stream: spi.StreamStderr, Text: "w"},
		{Level: spi.LevelError, Stream: spi.StreamStderr, Text: "e"},
		{Level: spi.LevelDebug, Stream: spi.StreamStderr, Text: "t"},
		{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "p"},
	}, s.lines)
}

// A line is cut at spi.MaxLogLineBytes before it reaches the sink,
// whatever the arguments hold.
func TestConsoleLineIsBounded(t *testing.T) {
	s := &sink{}
	evalLogged(t, `const x = "x".repeat(1e6); console.log(x); console.log("a", x, "b"); 0`, s)
	require.Len(t, s.lines, 2)
	assert.Len(t, s.lines[0].Text, spi.MaxLogLineBytes)
	assert.Len(t, s.lines[1].Text, spi.MaxLogLineBytes)
	assert.True(t, strings.HasPrefix(s.lines[1].Text, "a xxx"))
}

// Once the sink is full, console calls cost nothing and reach nobody.
func TestConsoleStopsWhenFull(t *testing.T) {
	s := &sink{max: 2}
	out := evalLogged(t, `for (let i = 0; i < 1000; i++) console.log(i); 1`, s)
	assert.Equal(t, spi.KindOK, out.Kind)
	assert.Equal(t, 2, s.calls, "the sink said it was full: no more calls")
}

// The lines of a run that throws are delivered, and the record has
// start-up and script time that fit in the backend call.
func TestConsoleThroughTheRecord(t *testing.T) {
	store := new(storage.MemoryStore)
	e, err := effect.New(store, newBackend(t, nil), nil)
	require.NoError(t, err)
	defer e.Close()
	rec, err := e.Run(context.Background(), effect.Call{Source: []byte(`console.log("before"); throw new TypeError("boom")`)})
	var f *effect.Failure
	require.ErrorAs(t, err, &f)
	require.NotNil(t, rec)
	require.Len(t, rec.Logs, 1)
	assert.Equal(t, "before", rec.Logs[0].Text)

	rec, err = e.Run(context.Background(), effect.Call{Source: []byte(`let n = 0; for (let i = 0; i < 1e5; i++) n += i; n`)})
	require.NoError(t, err)
	s := rec.Stats
	assert.Positive(t, s.Startup)
	assert.Positive(t, s.ScriptTime)
	assert.LessOrEqual(t, s.Startup+s.ScriptTime, s.BackendTime, "the engine's figures fit in the call the effect timed")
	assert.Zero(t, s.MemoryPeakBytes, "goja does not know its memory: no figure")
	assert.Empty(t, s.CPUUnit, "goja counts no CPU units: no figure")
	assert.Less(t, s.ScriptTime, time.Minute)
}
