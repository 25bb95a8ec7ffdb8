package quickjs

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

type logSink struct {
	mu    sync.Mutex
	lines []record.LogLine
}

func (s *logSink) Log(level spi.LogLevel, stream spi.LogStream, text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, record.LogLine{Level: level, Stream: stream, Text: text})
	return true
}

func evalLogged(t *testing.T, b *Backend, script string, s *logSink) spi.Outcome {
	t.Helper()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte(`null`),
		Limits: spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 64 << 20}, Logs: s})
	require.NoError(t, err)
	return out
}

// Each console method and print write one line at their level and
// stream, in order, on both runtimes; a line holding a newline or text
// that looks like a record is one line of the script's, never a result.
func TestLogsLevelsStreamsAndOrder(t *testing.T) {
	for _, mode := range []Mode{ModeParked, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			b := newBackend(t, &Options{Mode: mode})
			s := &logSink{}
			out := evalLogged(t, b, `console.log("a", 1, true); console.info("i"); console.debug("d");
				console.warn("w"); console.error("e"); console.trace("t"); print("p");
				console.log("two\nlines"); console.log("\u001eSBK0123456789abcdef0123456789abcdefR1\n9");
				7`, s)
			assert.Equal(t, spi.KindOK, out.Kind)
			assert.Equal(t, `7`, string(out.Value))
			type l = record.LogLine
			assert.Equal(t, []l{
				{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "a 1 true"},
				{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "i"},
				{Level: spi.LevelDebug, Stream: spi.StreamStdout, Text: "d"},
				{Level: spi.LevelWarn, Stream: spi.StreamStderr, Text: "w"},
				{Level: spi.LevelError, Stream: spi.StreamStderr, Text: "e"},
				{Level: spi.LevelDebug, Stream: spi.StreamStderr, Text: "t"},
				{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "p"},
				{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "two\nlines"},
				{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "\u001eSBK0123456789abcdef0123456789abcdefR1\n9"},
			}, s.lines)
		})
	}
}

// A huge line costs no more than wasmguest.LogLineUnits in the guest and
// spi.MaxLogLineBytes on the host.
func TestLogsHugeLineIsBounded(t *testing.T) {
	s := &logSink{}
	out := evalLogged(t, shared(t), `console.log("x".repeat(5e6), "y"); console.log("after"); 1`, s)
	assert.Equal(t, spi.KindOK, out.Kind)
	require.Len(t, s.lines, 2)
	assert.Len(t, s.lines[0].Text, wasmguest.LogLineUnits, "the wrapper cut it at LogLineUnits units")
	assert.Equal(t, "after", s.lines[1].Text)
}

// The memory high-water mark is the run's linear memory: a script that
// holds 8 MiB more reports about 8 MiB more (QuickJS's allocator rounds
// up: within 1 MiB), on both runtimes.
func TestStatsMemoryPeak(t *testing.T) {
	for _, mode := range []Mode{ModeParked, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			b := newBackend(t, &Options{Mode: mode})
			peak := func(script string) int64 {
				out := evalLogged(t, b, script, &logSink{})
				require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
				require.Positive(t, out.Stats.MemoryPeakBytes)
				return out.Stats.MemoryPeakBytes
			}
			base := peak(`1`)
			grown := peak(`const a = new Uint8Array(8 << 20); a[a.length - 1] = 1; a.length`)
			assert.InDelta(t, 8<<20, grown-base, 1<<20, "base %d, with 8 MiB %d", base, grown)
			again := peak(`1`)
			assert.Equal(t, base, again, "each run's own high-water mark, not the instance's")
		})
	}
}

// Through the effect: a failing run's lines, and figures that fit in the
// backend call.
func TestLogsThroughTheRecord(t *testing.T) {
	e, err := effect.New(new(storage.MemoryStore), shared(t), &effect.Options{AllowReusedEnvironment: true})
	require.NoError(t, err)
	rec, err := e.Run(context.Background(), effect.Call{Source: []byte(`console.error("about to throw"); throw new RangeError("no")`)})
	require.ErrorIs(t, err, effect.ErrScriptError)
	require.NotNil(t, rec)
	require.Len(t, rec.Logs, 1)
	assert.Equal(t, "about to throw", rec.Logs[0].Text)
	assert.Equal(t, spi.LevelError, rec.Logs[0].Level)
	s := rec.Stats
	assert.Positive(t, s.Startup)
	assert.Positive(t, s.MemoryPeakBytes)
	assert.LessOrEqual(t, s.Startup+s.ScriptTime, s.BackendTime)
}
