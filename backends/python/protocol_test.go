//go:build linux

package python_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/spi"
)

// runnerOut is a script prelude that finds the runner's protocol output
// (the script shares the runner's process, so it can): the descriptor
// the runner keeps as _OUT in its own globals.
const runnerOut = "import os, sys, signal\nout = sys.modules['__main__']._OUT\n"

// TestOutcomesForgedFromInside: whatever the script writes on the
// runner's channel, whatever it prints, however it ends its own process,
// the host reports the script's own failure (or its value), never a
// limit or inputTooLarge it did not meet: every limit is the host's
// finding from outside.
func TestOutcomesForgedFromInside(t *testing.T) {
	b := newBackend(t)
	for _, tc := range []struct {
		name, script string
	}{
		// The protocol as it was (JSON lines) and as it is (frames).
		{"old memory line", runnerOut + `os.write(out, b'{"t":"limit","k":"memory"}\n')` + "\nwhile True: pass"},
		{"old input line", runnerOut + `os.write(out, b'{"t":"input"}\n')` + "\nwhile True: pass"},
		{"memory frame after the start", runnerOut + `os.write(out, b"M\x00\x00\x00\x01s")` + "\nwhile True: pass"},
		{"input frame after the start", runnerOut + `os.write(out, b"M\x00\x00\x00\x01i")` + "\nwhile True: pass"},
		{"a second start frame, then the input frame", runnerOut + `os.write(out, b"S\x00\x00\x00\x00M\x00\x00\x00\x01i")` + "\nwhile True: pass"},
		{"a frame past its bound", runnerOut + `os.write(out, b"T\x7f\xff\xff\xff")` + "\nwhile True: pass"},
		// Exit codes that read as signals the limits send.
		{"exit code of SIGXCPU", runnerOut + "os._exit(128 + signal.SIGXCPU)"},
		{"exit code of SIGPROF", runnerOut + "os._exit(128 + signal.SIGPROF)"},
		{"exit code of SIGKILL", runnerOut + "os._exit(128 + signal.SIGKILL)"},
		// Signals the script sends itself.
		{"SIGXCPU to itself", runnerOut + "signal.signal(signal.SIGXCPU, signal.SIG_DFL)\nos.kill(os.getpid(), signal.SIGXCPU)\nos._exit(1)"},
		{"SIGPROF to itself", runnerOut + "os.kill(os.getpid(), signal.SIGPROF)\nwhile True: pass"},
		{"SIGKILL to itself", runnerOut + "os.kill(os.getpid(), signal.SIGKILL)\nos._exit(137)"},
		// A familiar error text before dying.
		{"MemoryError text, then a signal's exit code", runnerOut + "os.write(2, b'MemoryError\\nCannot allocate memory\\nout of memory\\n')\nos._exit(137)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := b.Evaluate(context.Background(), spi.Request{
				Script: []byte(tc.script), Input: json.RawMessage("null"),
				// Only the script's own doing (or the CPU budget, far
				// away) ends these runs.
				Limits: spi.Limits{WallClock: 10 * time.Minute, MemoryBytes: 64 << 20},
			})
			require.NoError(t, err)
			assert.Contains(t, []spi.OutcomeKind{spi.KindThrew, spi.KindOK}, out.Kind, "the script's own failure, not a limit: %+v", out)
		})
	}
}

// TestMemoryErrorWithoutALimit: a MemoryError the script raises in a run
// without a memory limit is its own failure: no limit held it.
func TestMemoryErrorWithoutALimit(t *testing.T) {
	b := newBackend(t)
	out, err := b.Evaluate(context.Background(), spi.Request{
		Script: []byte("raise MemoryError('made up')"), Input: json.RawMessage("null"),
		Limits: spi.Limits{WallClock: time.Minute},
	})
	require.NoError(t, err)
	assert.Equal(t, spi.Threw("MemoryError", "line 1: made up"), out)
}

// TestInputTooLargeIsTheHostsCheck: an input that cannot be parsed within
// the memory limit is inputTooLarge; an input of a few bytes never is,
// whatever the script says.
func TestInputTooLargeIsTheHostsCheck(t *testing.T) {
	b := newBackend(t)
	big := make([]byte, 0, 9<<20)
	big = append(big, '[')
	for len(big) < 9<<20 {
		big = append(big, "0,"...)
	}
	big = append(big, '0', ']')
	out, err := b.Evaluate(context.Background(), spi.Request{
		Script: []byte("input"), Input: big, Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20},
	})
	require.NoError(t, err)
	assert.Equal(t, spi.InputTooLarge(), out)
}

// TestCPULimitWhenTheScriptIgnoresItsSignals: a script that ignores
// SIGPROF and SIGXCPU is still ended at the CPU budget (RLIMIT_CPU's
// SIGKILL), and the host reports the CPU limit from the CPU time it reads.
func TestCPULimitWhenTheScriptIgnoresItsSignals(t *testing.T) {
	needSandbox(t)
	b, err := python.New(&python.Options{CPUTime: 300 * time.Millisecond})
	require.NoError(t, err)
	out, err := b.Evaluate(context.Background(), spi.Request{
		Script: []byte("import signal\nfor s in (signal.SIGPROF, signal.SIGXCPU):\n    signal.signal(s, signal.SIG_IGN)\nsignal.setitimer(signal.ITIMER_PROF, 0)\nwhile True:\n    pass"),
		Input:  json.RawMessage("null"),
		Limits: spi.Limits{WallClock: 10 * time.Minute, MemoryBytes: 64 << 20},
	})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitCPU), out)
}

// craftedHost answers with text that held newlines and protocol text: an
// answer spread over lines, an answer holding a whole answer of the old
// line protocol and the bytes of an answer frame, and a refusal.
type craftedHost struct{ start bool }

var craftedAnswers = map[string]string{
	"pretty":  "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n",
	"forged":  `"x\n{\"i\":1,\"ok\":true}\n"`,
	"frame":   `"O\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0001\u0000\u0000\u0000\u0004true"`,
	"approve": "false\n",
}

func (h craftedHost) Call(_ context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	if name == "fails" {
		return nil, errors.New("no\n{\"i\":1,\"ok\":true}\nreally")
	}
	return json.RawMessage(craftedAnswers[name]), nil
}

type startingCraftedHost struct{ craftedHost }

func (h startingCraftedHost) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) {
	go func() { done(h.Call(ctx, name, args)) }()
}

// TestHostAnswersArriveIntactAndMatched: answers holding newlines and
// protocol text arrive whole, each to its own call, one at a time and in
// flight at once; a refusal's text too.
func TestHostAnswersArriveIntactAndMatched(t *testing.T) {
	b := newBackend(t)
	const want = `[{"a":[1,2]},"x\n{\"i\":1,\"ok\":true}\n","O\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0001\u0000\u0000\u0000\u0004true",false,"no\n{\"i\":1,\"ok\":true}\nreally"]`
	for _, tc := range []struct {
		name, script string
		host         spi.Host
	}{
		{"one at a time", "def err():\n    try:\n        host.fails()\n    except HostError as e:\n        return str(e)\n[host.pretty(), host.forged(), host.frame(), host.approve(), err()]", craftedHost{}},
		{"in flight at once", "import asyncio\nasync def err():\n    try:\n        await host.fails()\n    except HostError as e:\n        return str(e)\nasync def main():\n    return await asyncio.gather(host.pretty(), host.forged(), host.frame(), host.approve(), err())\nawait main()", startingCraftedHost{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := b.Evaluate(context.Background(), spi.Request{
				Script: []byte(tc.script), Input: json.RawMessage("null"), Host: tc.host,
				Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20},
			})
			require.NoError(t, err)
			require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
			assert.JSONEq(t, want, string(out.Value))
		})
	}
}

// TestHostMemoryBoundedPerRun: a run limited to 32 MiB that floods the
// runner's channel with each kind of frame (and with a line of the old
// protocol) grows the host's heap by less than the run's limit: every
// frame is bounded by its kind before it is buffered. The heap is
// sampled while the run goes on; the bound is generous (the limit itself,
// where one flood's frame alone is 96 MiB).
func TestHostMemoryBoundedPerRun(t *testing.T) {
	b := newBackend(t)
	const limit = 32 << 20
	// flood writes a frame header claiming 96 MiB, then 96 MiB of
	// payload a MiB at a time (the script never holds more than a MiB).
	flood := func(head string) string {
		return runnerOut + "chunk = b'x' * (1 << 20)\nos.write(out, " + head + ")\nfor _ in range(96):\n    os.write(out, chunk)\n'done'"
	}
	const size = `(96 << 20).to_bytes(4, 'big')`
	for _, tc := range []struct{ name, script string }{
		{"old log line", flood(`b'{"t":"log","l":"info","s":"stdout","m":"'`)},
		{"log", flood(`b"L" + ` + size + ` + b"io"`)},
		{"threw", flood(`b"T" + ` + size + ` + b"\x05Error"`)},
		{"host call", flood(`b"C" + ` + size + ` + b"\x01f"`)},
		{"value", flood(`b"V" + ` + size)},
		{"many log lines", "line = 'x' * (1 << 16)\nfor _ in range(2000):\n    print(line)\n'done'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			heapGrowth := watchHeap()
			out, err := b.Evaluate(context.Background(), spi.Request{
				Script: []byte(tc.script), Input: json.RawMessage("null"), Host: echoHost{}, Logs: discardLogs{},
				Limits: spi.Limits{WallClock: 10 * time.Minute, MemoryBytes: limit},
			})
			require.NoError(t, err)
			assert.NotEqual(t, spi.KindLimit, out.Kind, "%+v", out)
			growth := heapGrowth()
			t.Logf("heap grew by %d KiB during the run (%s)", growth>>10, out.Kind)
			assert.Less(t, growth, int64(limit), fmt.Sprintf("the host's heap grew by %d MiB during one run limited to %d MiB", growth>>20, limit>>20))
		})
	}
}

// watchHeap samples the Go heap in use every millisecond from now on; the
// function it returns stops the sampling and gives the peak's growth
// over the heap at the start (after a collection).
func watchHeap() (growth func() int64) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := before.HeapInuse
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	})
	return func() int64 {
		close(stop)
		wg.Wait()
		return int64(peak) - int64(before.HeapInuse)
	}
}

// echoHost answers every call with its argument.
type echoHost struct{}

func (echoHost) Call(_ context.Context, _ string, args json.RawMessage) (json.RawMessage, error) {
	return args, nil
}

// TestHostAnswersWaitingAreBounded: a run limited to 32 MiB that issues
// 300 host calls of 1 MiB each and never reads an answer leaves at most
// what the process could hold waiting for it on the host (the memory
// limit plus the interpreter's start-up mapping, about 58 MiB here):
// past that the host reads nothing more from the run, which ends at its
// wall clock. The bound checked is generous (the heap counts garbage not
// yet collected); without it, the 300 MiB of answers wait on the host.
func TestHostAnswersWaitingAreBounded(t *testing.T) {
	b := newBackend(t)
	const limit = 32 << 20
	script := "import asyncio\nasync def main():\n    arg = 'x' * (1 << 20)\n    calls = [host.echo(arg) for _ in range(300)]\n    while True:\n        pass\nawait main()"
	heapGrowth := watchHeap()
	out, err := b.Evaluate(context.Background(), spi.Request{
		Script: []byte(script), Input: json.RawMessage("null"), Host: startingEchoHost{},
		Limits: spi.Limits{WallClock: 10 * time.Second, MemoryBytes: limit},
	})
	require.NoError(t, err)
	growth := heapGrowth()
	t.Logf("heap grew by %d MiB during the run (%+v)", growth>>20, out)
	assert.Less(t, growth, int64(200<<20), "the host's heap grew by %d MiB for answers the runner never read", growth>>20)
}

// startingEchoHost answers every call with its argument, started on a
// goroutine of its own.
type startingEchoHost struct{ echoHost }

func (h startingEchoHost) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) {
	go func() { done(h.Call(ctx, name, args)) }()
}

// TestHostFactsHidden: uuid1 reads the fake clock and a fixed node, and
// an unseeded random.Random() is seeded: the same in every run.
func TestHostFactsHidden(t *testing.T) {
	b := newBackend(t)
	const script = "import uuid, random, datetime\nu = uuid.uuid1()\n" +
		"[str(u), (datetime.datetime(1582, 10, 15) + datetime.timedelta(microseconds=u.time // 10)).year, u.node, random.Random().random(), random.Random().random()]"
	first := eval(t, b, script, "null")
	require.Equal(t, spi.KindOK, first.Kind, "%+v", first)
	second := eval(t, b, script, "null")
	assert.JSONEq(t, string(first.Value), string(second.Value), "the same in every run")
	var got []any
	require.NoError(t, json.Unmarshal(first.Value, &got))
	assert.EqualValues(t, 2000, got[1], "uuid1's clock is the fake clock")
	assert.NotEqual(t, got[3], got[4], "two unseeded generators of one run differ")
}
