package starlarkwasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
	"github.com/sandbank/sandbank/spi"
)

// The proofs of parked instances (park.go): a parked run means what a
// fresh one means, whatever the runs before it did.

// parkMemory is the memory limit of the cases: room for the growth cases,
// small enough for the out-of-memory one.
const parkMemory int64 = 64 << 20

// parkSteps is the step budget of both backends, so that the step-budget
// case ends soon.
const parkSteps = 2_000_000

// parkCase is one script of the differential corpus.
type parkCase struct {
	name, src, input string
	host, logs       bool
	wall             time.Duration // the script's wall clock; zero: a minute
}

// parkCases exercise every ending of the guest and what a script could
// try to leave behind: printed lines, host calls, errors, the step
// budget, memory grown past the park point, the Go runtime's fatal out
// of memory, a kill, the module's frozen globals.
var parkCases = []parkCase{
	{name: "echo", src: "def main(input):\n    return input", input: `{"a":[1,2,3],"s":"é😀"}`},
	{name: "arithmetic", src: "def main(input):\n    n = 0\n    for i in range(10000):\n        n += i * i % 7\n    return n", input: `null`},
	{name: "print", src: "def main(input):\n    for i in range(20):\n        print('line', i, input)\n    return 'printed'", input: `"x"`, logs: true},
	{name: "print without a sink", src: "def main(input):\n    print('dropped')\n    return 1", input: `1`},
	{name: "fail", src: "def main(input):\n    fail('boom', input)", input: `{"k":"v"}`},
	{name: "division by zero", src: "def main(input):\n    return 1 // input", input: `0`},
	{name: "syntax error", src: "def main(input):\n  return (", input: `{}`},
	{name: "no main", src: "x = 1", input: `{}`},
	{name: "module global", src: "seen = []\ndef main(input):\n    seen.append(input)\n    return len(seen)", input: `1`},
	{name: "module global read", src: "n = 40 + 2\ndef main(input):\n    return n", input: `1`},
	{name: "allocate strings", src: "def main(input):\n    n = 0\n    for i in range(2000):\n        s = 'abc' * 1000\n        n += len(s)\n    return n", input: `0`},
	{name: "allocate a dict", src: "def main(input):\n    d = {str(i): i for i in range(50000)}\n    return len(d)", input: `0`},
	{name: "grow memory past the park point", src: "def main(input):\n    s = 'x' * 20000000\n    return len(s)", input: `0`},
	{name: "big input", src: "def main(input):\n    return len(input)", input: `"` + strings.Repeat("z", 200000) + `"`},
	{name: "step budget", src: "def main(input):\n    for i in range(100000000):\n        pass", input: `0`},
	{name: "interpreter refuses a huge repeat", src: "def main(input):\n    return [0] * 2000000000", input: `0`},
	{name: "out of memory", src: "def main(input):\n    a = 'x' * 30000000\n    b = a + 'y'\n    c = b + 'z'\n    return len(c)", input: `0`},
	{name: "host calls", src: "def main(input):\n    a = host.probe(input)\n    print('got', a)\n    v, err = host_try('fails', [1])\n    return [a, v, err]", input: `{"q":1}`, host: true, logs: true},
	{name: "killed at its wall clock", src: "def main(input):\n    x = []\n    for i in range(1 << 62):\n        x.append(i)\n        if len(x) > 1000:\n            x = []", input: `0`, wall: 300 * time.Millisecond},
}

// recordingHost answers the host calls the same way every time, and
// keeps them.
type recordingHost struct {
	mu    sync.Mutex
	calls []string
}

func (h *recordingHost) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	h.mu.Lock()
	h.calls = append(h.calls, name+string(args))
	h.mu.Unlock()
	if name == "fails" {
		return nil, errors.New("no such thing")
	}
	return json.RawMessage(`{"echo":` + string(args) + `}`), nil
}

// lines keeps a run's log lines.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (s *lines) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.l = append(s.l, level.String()+" "+stream.String()+" "+line)
	return true
}

// seen is what one run of a case left for its caller.
type seen struct {
	Out   spi.Outcome
	Err   string
	Logs  []string
	Calls []string
}

func runCase(t testing.TB, b *Backend, c parkCase) seen {
	t.Helper()
	wall := c.wall
	if wall == 0 {
		wall = time.Minute
	}
	req := spi.Request{Script: []byte(c.src), Input: json.RawMessage(c.input), Limits: spi.Limits{WallClock: wall, MemoryBytes: parkMemory}}
	h, l := &recordingHost{}, &lines{}
	if c.host {
		req.Host = h
	}
	if c.logs {
		req.Logs = l
	}
	out, err := b.Evaluate(context.Background(), req)
	s := seen{Out: out, Logs: l.l, Calls: h.calls}
	if err != nil {
		s.Err = err.Error()
	}
	return s
}

func newParkTestBackend(t testing.TB, mode Mode, poolSize int) *Backend {
	t.Helper()
	b, err := New(&Options{Mode: mode, PoolSize: poolSize, MaxSteps: parkSteps, NoCache: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.Equal(t, mode, b.Mode(), "parked mode fell back: %v", b.ParkedModeError())
	require.NoError(t, b.Warm(context.Background()))
	return b
}

// freshAnswers runs every case once on a fresh backend.
func freshAnswers(t testing.TB, cases []parkCase) map[string]seen {
	t.Helper()
	fresh := newParkTestBackend(t, ModeFresh, 0)
	want := map[string]seen{}
	for _, c := range cases {
		want[c.name] = runCase(t, fresh, c)
	}
	return want
}

// TestParkedMatchesFresh: every case, twice (once with -short or -race), in a
// shuffled order, on one
// pool of one parked instance, means exactly what it means on a fresh
// instance (outcome, log lines, host calls), whatever ran before it. This
// is what FreshPerRun declares.
func TestParkedMatchesFresh(t *testing.T) {
	want := freshAnswers(t, parkCases)
	for _, c := range parkCases { // the corpus reaches the ending it is named after
		require.Empty(t, want[c.name].Err, c.name)
	}
	assert.Equal(t, spi.KindOK, want["echo"].Out.Kind)
	assert.Equal(t, spi.Limited(spi.LimitCPU), want["step budget"].Out)
	assert.Equal(t, spi.Limited(spi.LimitMemory), want["out of memory"].Out)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), want["killed at its wall clock"].Out)
	assert.NotEmpty(t, want["print"].Logs)
	assert.NotEmpty(t, want["host calls"].Calls)

	b := newParkTestBackend(t, ModeParked, 1)
	var restores int
	b.restored = func(*instance) { restores++ }
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	order := append([]parkCase(nil), parkCases...)
	if !testing.Short() && !raceEnabled {
		order = append(order, parkCases...)
	}
	rand.New(rand.NewPCG(seed, 1)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for i, c := range order {
		got := runCase(t, b, c)
		require.Equal(t, want[c.name], got, "run %d: %s", i, c.name)
	}
	assert.Positive(t, restores) // runs were served by restored instances
}

// TestRestoreCompleteness: at every park point after the first (the read
// the guest repeats after a restore), linear memory below the park
// point's size is the park point's, every byte above it up to the real
// size is zero, every mutable global is its park value, and the clocks
// and the random source are the park point's; a secret a
// run wrote into memory grown past the park point is gone for the next
// run.
func TestRestoreCompleteness(t *testing.T) {
	b := newParkTestBackend(t, ModeParked, 1)
	secret := []byte("SECRET-7f3a-")
	var (
		mu       sync.Mutex
		problems []string
		checks   int
	)
	b.retaken = func(inst *instance) {
		memory := inst.mod.Memory()
		all, ok := memory.Read(0, memory.Size())
		park := len(inst.image)
		var p []string
		switch {
		case !ok:
			p = append(p, "memory unreadable")
		case !bytes.Equal(all[:park], inst.image):
			p = append(p, "memory below the park point differs from the park point's")
		case bytes.ContainsFunc(all[park:], func(r rune) bool { return r != 0 }):
			p = append(p, fmt.Sprintf("memory above the park point (%d of %d bytes) is not zero", park, len(all)))
		}
		if ok && bytes.Contains(all, secret) {
			p = append(p, "the secret survived")
		}
		for i, g := range inst.globals {
			if g.Get() != inst.globalVals[i] {
				p = append(p, fmt.Sprintf("global %d is not its park value", i))
			}
		}
		if !reflect.DeepEqual(inst.replay.Save(), inst.replayAt) {
			p = append(p, "the clocks or the random source are not the park point's")
		}
		mu.Lock()
		defer mu.Unlock()
		checks++
		problems = append(problems, p...)
	}
	writer := parkCase{name: "secret", src: "def main(input):\n    s = input * 2000000\n    return len(s)", input: `"` + string(secret) + `"`}
	for _, c := range []parkCase{writer, parkCases[0], writer, parkCases[0], parkCases[2]} {
		got := runCase(t, b, c)
		require.Empty(t, got.Err, c.name)
		require.Equal(t, spi.KindOK, got.Out.Kind, c.name)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 5, checks) // every run was served by a restored instance
	assert.Empty(t, problems)
}

// TestParkedInstanceEnds: an instance parks again after a result, a
// thrown error or the step budget, and ends after anything else (a kill,
// running out of memory, a protocol record) or its maxRestores runs; the
// runs after it are served by its replacement, booted off the request
// path.
func TestParkedInstanceEnds(t *testing.T) {
	b := newParkTestBackend(t, ModeParked, 1)
	b.maxRestores = 4
	byName := map[string]parkCase{}
	for _, c := range parkCases {
		byName[c.name] = c
	}
	protocol := parkCase{name: "protocol", src: "def main(input):\n    return input", input: `{`}
	runCase(t, b, byName["echo"]) // boots the pool of parkMemory (Warm's is DefaultMemoryBytes's)
	steps := []struct {
		c    parkCase
		ends bool
	}{
		{byName["fail"], false},
		{byName["step budget"], false},
		{byName["killed at its wall clock"], true},
		{byName["echo"], false},
		{byName["out of memory"], true},
		{protocol, true},
		{byName["echo"], false},
		{byName["syntax error"], false},
		{byName["echo"], false},
		{byName["echo"], true}, // its fourth restore: worn
		{byName["echo"], false},
	}
	boots := b.boots.Load()
	for i, s := range steps {
		got := runCase(t, b, s.c)
		if s.c.name != protocol.name {
			require.Empty(t, got.Err, "step %d: %s", i, s.c.name)
		}
		if s.c.name == "echo" { // the runs after an instance ended mean what they mean
			require.Equal(t, spi.OK(json.RawMessage(`{"a":[1,2,3],"s":"é😀"}`)), got.Out, "step %d", i)
		}
		if s.ends {
			boots++
		}
		require.Equal(t, boots, b.boots.Load(), "step %d: %s", i, s.c.name)
	}
}

// TestParkedSoak runs a random mix of cases from two goroutines on one
// small pool, each compared with its fresh answer.
func TestParkedSoak(t *testing.T) {
	var mix []parkCase
	for _, c := range parkCases {
		switch c.name {
		case "grow memory past the park point", "out of memory", "allocate a dict", "big input":
			continue // slow; the differential test has them
		}
		mix = append(mix, c)
	}
	want := freshAnswers(t, mix)
	b := newParkTestBackend(t, ModeParked, 1)
	runs := 150
	if testing.Short() || raceEnabled {
		runs = 40
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	errs := make(chan string, 2*runs)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for range runs {
				c := mix[rng.IntN(len(mix))]
				if got := runCase(t, b, c); !assert.ObjectsAreEqual(want[c.name], got) {
					errs <- fmt.Sprintf("%s: got %+v, want %+v", c.name, got, want[c.name])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	b.pools.Each(func(k poolKey, p *pool) { // what is kept stays bounded by the pools' size
		idle, booting, _ := p.Counts()
		assert.LessOrEqual(t, idle+booting, 1, "pool %+v", k)
	})
}

// TestParkedModeRefusesAWritableTable: a restore does not cover the
// function table, so parked mode needs the proof that no table is ever
// written. Fed a guest that could write its table, New falls back to
// ModeFresh and says why, and the backend runs. Without the proof in the
// pass list, the backend would park the module.
func TestParkedModeRefusesAWritableTable(t *testing.T) {
	shipped := guestWASM
	t.Cleanup(func() { guestWASM = shipped })
	m, err := wasmrewrite.Decode(guestWASM)
	require.NoError(t, err)
	void := -1
	for i, ft := range m.Types {
		if len(ft.Params) == 0 && len(ft.Results) == 0 {
			void = i
		}
	}
	require.GreaterOrEqual(t, void, 0, "the guest has a function type () -> ()")
	m.Funcs = append(m.Funcs, uint32(void))
	// i32.const 0, ref.null func, table.set 0, end
	m.Code = append(m.Code, wasmrewrite.Body{Code: []byte{0x41, 0, 0xd0, 0x70, 0x26, 0, 0x0b}})
	guestWASM = m.Encode()

	// A cache directory of its own: the engines of the process are per
	// directory, and the shared ones rewrote the shipped guest.
	b, err := New(&Options{CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	assert.Equal(t, ModeFresh, b.Mode())
	require.ErrorIs(t, b.ParkedModeError(), wasmrewrite.ErrTableWritten)
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("def main(input):\n    return input + 1"), Input: json.RawMessage(`1`)})
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage(`2`)), out)
	assert.Zero(t, b.boots.Load(), "no parked instance")
}

// TestUnexpectedWASICallEndsTheInstance: a WASI function of the guest's
// imports outside the expected set answers ENOSYS and marks the
// instance, and a run whose instance is marked ends it, though the run
// itself ended cleanly.
func TestUnexpectedWASICallEndsTheInstance(t *testing.T) {
	b := newParkTestBackend(t, ModeParked, 1)
	var refused []string
	wasi := b.peng.rt.Module(wasi_snapshot_preview1.ModuleName) // the parked host module, as instances see it
	require.NotNil(t, wasi)
	wasm, err := b.peng.rewritten()
	require.NoError(t, err)
	refusedFuncs, err := parkedWASI.Refused(wasm)
	require.NoError(t, err)
	for _, f := range refusedFuncs {
		name := f.Name
		inst := &instance{}
		fn, ok := wasi.ExportedFunctionDefinitions()[name].GoFunction().(api.GoModuleFunction)
		require.True(t, ok, name)
		stack := make([]uint64, max(len(f.Params), len(f.Results)))
		fn.Call(inst.With(context.Background()), nil, stack)
		if len(f.Results) > 0 {
			assert.EqualValues(t, park.ErrnoNosys, stack[0], name)
		}
		assert.True(t, inst.Seat().Unexpected(), name)
		assert.False(t, expectedWASI[name] || name == "fd_read" || name == "proc_exit", name)
		refused = append(refused, name)
	}
	require.NotEmpty(t, refused) // the Go runtime imports more than it calls (path_open, fd_close, …)
	t.Logf("refused: %v", refused)

	echo := parkCases[0]
	runCase(t, b, echo) // the pool of parkMemory
	boots := b.boots.Load()
	runCase(t, b, echo)
	require.Equal(t, boots, b.boots.Load(), "a clean run keeps its instance")
	b.restored = func(inst *instance) { inst.Seat().MarkUnexpected() } // as if the run made such a call
	got := runCase(t, b, echo)
	b.restored = nil
	require.Equal(t, spi.KindOK, got.Out.Kind)
	require.Equal(t, boots+1, b.boots.Load(), "the marked instance ended")

	// A mark belongs to the run it was made in: the restore of the next
	// run clears one made while the instance was parked.
	p := b.pools.For(poolKey{memoryBytes: parkMemory})
	require.NotNil(t, p)
	inst, ok := p.Await(context.Background()) // the replacement, once it parked
	require.True(t, ok)
	inst.Seat().MarkUnexpected()
	require.True(t, p.Put(inst))
	runCase(t, b, echo)
	assert.Equal(t, boots+1, b.boots.Load(), "the instance marked while parked is kept")
}
