package extism

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

type sink struct {
	mu    sync.Mutex
	lines []record.LogLine
}

func (s *sink) Log(level spi.LogLevel, stream spi.LogStream, text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, record.LogLine{Level: level, Stream: stream, Text: text})
	return true
}

var recordLimits = spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20}

// WASI standard output and error arrive line by line, in order with the
// Extism log functions; a last line without a newline arrives too; the
// SDK's own diagnostics do not.
func TestWASIStdioReachesTheSink(t *testing.T) {
	module, err := os.ReadFile("testdata/wasi_stdio.wasm")
	require.NoError(t, err)
	b := newTestBackend(t, &Options{EnableWASI: true})
	s := &sink{}
	out, err := b.Evaluate(context.Background(), spi.Request{Script: module, Input: json.RawMessage(`0`), Limits: recordLimits, Logs: s})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	type l = record.LogLine
	assert.Equal(t, []l{
		{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "out one"},
		{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "logged"},
		{Level: spi.LevelError, Stream: spi.StreamStderr, Text: "err line"},
		{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "out two"},
	}, s.lines)
}

// The memory high-water mark is the instance's wasm memory: a plugin that
// holds N more bytes reports N more, within one page either way.
func TestMemoryPeakIsTheInstancesMemory(t *testing.T) {
	probe, err := wasm.Set().Script("memory_probe")
	require.NoError(t, err)
	b := newTestBackend(t, nil)
	peak := func(n int) int64 {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: probe, Input: json.RawMessage(strconv.Itoa(n)), Limits: recordLimits, Logs: &sink{}})
		require.NoError(t, err)
		require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
		require.Positive(t, out.Stats.MemoryPeakBytes)
		return out.Stats.MemoryPeakBytes
	}
	base := peak(1)
	const n = 8 << 20
	grown := peak(n)
	assert.InDelta(t, n, grown-base, wasmPageSize, "holding %d bytes grew the high-water mark from %d to %d", n, base, grown)
	assert.Less(t, base, int64(4<<20), "an idle plugin and the kernel hold a few pages")

	// Through the effect, with the other figures.
	e, err := effect.New(new(storage.MemoryStore), b, nil)
	require.NoError(t, err)
	rec, err := e.Run(context.Background(), effect.Call{Source: probe, Input: 1})
	require.NoError(t, err)
	assert.Equal(t, base, rec.Stats.MemoryPeakBytes)
	assert.Positive(t, rec.Stats.ScriptTime)
	assert.LessOrEqual(t, rec.Stats.Startup+rec.Stats.ScriptTime, rec.Stats.BackendTime)
}
