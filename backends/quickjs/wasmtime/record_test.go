//go:build cgo

package wasmtime

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
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
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	return out
}

// The lines arrive as on the wazero runtime; the fuel figure is wasmtime's
// own count: the same script spends the same fuel every run, and a loop
// twice as long spends about twice the loop's fuel. A backend without a
// CPU budget counts no fuel, and reports none.
func TestLogsAndFuel(t *testing.T) {
	assert.Empty(t, evalLogged(t, shared(t), `1`, &logSink{}).Stats.CPUUnit, "no budget, no fuel counted")
	b := newBackend(t, &Options{Fuel: MaxFuel})
	s := &logSink{}
	evalLogged(t, b, `console.log("one"); console.error("two"); 1`, s)
	assert.Equal(t, []record.LogLine{
		{Level: spi.LevelInfo, Stream: spi.StreamStdout, Text: "one"},
		{Level: spi.LevelError, Stream: spi.StreamStderr, Text: "two"},
	}, s.lines)

	fuel := func(n int) int64 {
		out := evalLogged(t, b, "let x = 0; for (let i = 0; i < "+strconv.Itoa(n)+"; i++) x = (x + i) | 0; x", &logSink{})
		require.Equal(t, "fuel", out.Stats.CPUUnit)
		return out.Stats.CPUUnits
	}
	f0, f0again := fuel(0), fuel(0)
	assert.Equal(t, f0, f0again, "fuel is deterministic")
	f1, f2 := fuel(100000), fuel(200000)
	loop1, loop2 := f1-f0, f2-f0
	assert.Positive(t, loop1)
	assert.InEpsilon(t, 2*loop1, loop2, 0.1, "twice the loop, twice the fuel (within 10%%): %d, %d", loop1, loop2)
}

// The memory high-water mark is the store's linear memory.
func TestStatsMemoryPeak(t *testing.T) {
	b := shared(t)
	base := evalLogged(t, b, `1`, &logSink{}).Stats.MemoryPeakBytes
	grown := evalLogged(t, b, `const a = new Uint8Array(8 << 20); a[a.length - 1] = 1; a.length`, &logSink{}).Stats.MemoryPeakBytes
	require.Positive(t, base)
	assert.InDelta(t, 8<<20, grown-base, 1<<20, "base %d, with 8 MiB %d", base, grown)
}
