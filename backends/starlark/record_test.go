package starlark_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

type sink struct {
	mu    sync.Mutex
	texts []string
	calls int
	max   int
}

func (s *sink) Log(level spi.LogLevel, stream spi.LogStream, text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if level != spi.LevelInfo || stream != spi.StreamStdout {
		text = "WRONG LEVEL OR STREAM: " + text
	}
	if s.max > 0 && len(s.texts) >= s.max {
		return false
	}
	s.texts = append(s.texts, text)
	return s.max == 0 || len(s.texts) < s.max
}

func evalLogged(t *testing.T, b spi.Backend, src string, s *sink) spi.Outcome {
	t.Helper()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(src), Input: json.RawMessage(`null`), Limits: generous, Logs: s})
	require.NoError(t, err)
	return out
}

func TestPrintReachesTheSink(t *testing.T) {
	s := &sink{}
	out := evalLogged(t, newBackend(t, nil), "def main(input):\n    print('a', 1)\n    print('x' * 100000)\n    for i in range(50):\n        print(i)\n    return 1\n", s)
	assert.Equal(t, spi.KindOK, out.Kind)
	require.Len(t, s.texts, 52)
	assert.Equal(t, "a 1", s.texts[0])
	assert.Len(t, s.texts[1], spi.MaxLogLineBytes, "cut at the bound")
	assert.Equal(t, "49", s.texts[51])

	s = &sink{max: 3}
	evalLogged(t, newBackend(t, nil), "def main(input):\n    for i in range(50):\n        print(i)\n    return 1\n", s)
	assert.Equal(t, 3, s.calls, "no calls once the sink is full")
}

// The step count is Starlark's own: a loop of 2N iterations costs exactly
// N iterations more than a loop of N, and a run the budget stopped
// reports the budget.
func TestStepsAreStarlarksCount(t *testing.T) {
	steps := func(b spi.Backend, n int) int64 {
		out := evalLogged(t, b, fmt.Sprintf("def main(input):\n    x = 0\n    for i in range(%d):\n        x += i\n    return x\n", n), &sink{})
		require.Equal(t, "steps", out.Stats.CPUUnit)
		return out.Stats.CPUUnits
	}
	b := newBackend(t, nil)
	s0, s1, s2 := steps(b, 0), steps(b, 1000), steps(b, 2000)
	assert.Positive(t, s0)
	assert.Greater(t, s1, s0+1000, "at least one step per iteration")
	assert.Equal(t, s1-s0, s2-s1, "each iteration costs the same steps")

	limited := newBackend(t, &starlark.Options{MaxSteps: 5000})
	out := evalLogged(t, limited, "def main(input):\n    for i in range(100000000):\n        pass\n", &sink{})
	require.Equal(t, spi.KindLimit, out.Kind, "%+v", out)
	assert.GreaterOrEqual(t, out.Stats.CPUUnits, int64(5000))
	assert.Less(t, out.Stats.CPUUnits, int64(5100), "stopped at the budget")
}

// Through the effect: the lines of a failing run are in its record, and
// the figures fit in the call.
func TestPrintThroughTheRecord(t *testing.T) {
	e, err := effect.New(new(storage.MemoryStore), newBackend(t, nil), nil)
	require.NoError(t, err)
	defer e.Close()
	rec, err := e.Run(context.Background(), effect.Call{Source: []byte("def main(input):\n    print('about to fail')\n    fail('no')\n")})
	require.ErrorIs(t, err, effect.ErrScriptError)
	require.NotNil(t, rec)
	require.Len(t, rec.Logs, 1)
	assert.Equal(t, "about to fail", rec.Logs[0].Text)
	assert.Positive(t, rec.Stats.CPUUnits)
	assert.LessOrEqual(t, rec.Stats.Startup+rec.Stats.ScriptTime, rec.Stats.BackendTime)
	assert.True(t, strings.HasPrefix(string(rec.Receipt.Script), "sha256:"))
}
