package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

func TestToolsAreTheRegistrysLanguages(t *testing.T) {
	f := newFakes()
	srv := newServer(t, f, &mcpserver.Options{Limits: spi.Limits{WallClock: 7 * time.Second, MemoryBytes: 16 << 20}}, "javascript", "starlark", "wasm")
	cs := connect(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	byName := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
	}
	// wasm has no tool (its scripts are modules, not text); typescript is
	// not in this registry.
	assert.Equal(t, []string{"list_engines", "run_javascript", "run_starlark"}, names)
	assert.Equal(t, []string{"run_javascript", "run_starlark", "list_engines"}, srv.Tools())

	js := byName["run_javascript"]
	assert.Contains(t, js.Description, "`input`")
	assert.Contains(t, js.Description, "LAST EXPRESSION STATEMENT")
	assert.Contains(t, js.Description, "Wall clock 7s", "the server's limit, in the description")
	assert.Contains(t, js.Description, "Memory 16 MiB (limits.memoryBytes), enforced")
	assert.Contains(t, byName["run_starlark"].Description, "def main(input):")
	schema, err := json.Marshal(js.InputSchema)
	require.NoError(t, err)
	var s struct {
		Required   []string `json:"required"`
		Properties struct {
			Limits struct {
				Properties struct {
					TimeoutMs struct {
						Maximum int64 `json:"maximum"`
					} `json:"timeoutMs"`
				} `json:"properties"`
			} `json:"limits"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(schema, &s))
	assert.Equal(t, []string{"script"}, s.Required)
	assert.Equal(t, int64(7000), s.Properties.Limits.Properties.TimeoutMs.Maximum)
	assert.NotNil(t, js.OutputSchema)
	assert.Zero(t, f.calls(), "listing the tools runs nothing")
}

func TestDescriptionSaysWhenMemoryIsNotBounded(t *testing.T) {
	r := registry.New()
	caps := fakebackend.Capabilities()
	caps.Language, caps.Memory, caps.WallClock = "starlark", false, spi.WallClockSoft
	r.Register(registry.Entry{Engine: "soft", Language: "starlark", Capabilities: caps,
		Factory: func() (spi.Backend, error) { return fakebackend.New(caps, nil), nil }})
	srv, err := mcpserver.New(r, nil)
	require.NoError(t, err)
	cs := connect(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 2)
	d := list.Tools[1].Description
	assert.Contains(t, d, "this engine does not bound memory")
	assert.Contains(t, d, "checked between steps")
	assert.NotContains(t, d, "enforced")
}

func TestListEngines(t *testing.T) {
	f := newFakes()
	cs := connect(t, newServer(t, f, nil, "javascript", "typescript"), nil)
	res, _, err := call(t, cs, "list_engines", map[string]any{})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var e mcpserver.Engines
	require.NoError(t, json.Unmarshal(b, &e))
	require.Len(t, e.Engines, 2)
	assert.Equal(t, "run_javascript", e.Engines[0].Tool)
	assert.Equal(t, "fake-typescript", e.Engines[1].Engine)
	assert.Equal(t, effect.DefaultWallClock.Milliseconds(), e.Engines[0].Limits.TimeoutMs)
	assert.True(t, e.Engines[0].Limits.MemoryEnforced)
	assert.Contains(t, textOf(res), "run_typescript: engine fake-typescript")
}

func TestRunMapsEveryKindOfAnswer(t *testing.T) {
	f := newFakes()
	cs := connect(t, newServer(t, f, nil, "javascript"), nil)

	t.Run("value", func(t *testing.T) {
		res, r, err := call(t, cs, "run_javascript", map[string]any{"script": "echo", "input": map[string]any{"b": 2, "a": 1}})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		assert.True(t, r.OK)
		assert.JSONEq(t, `{"a":1,"b":2}`, string(r.Value))
		assert.Equal(t, "fake-javascript", r.Engine)
		require.NotNil(t, r.Stats)
		require.NotNil(t, r.Receipt)
		assert.Equal(t, record.OutcomeOK, r.Receipt.Outcome)
		assert.Equal(t, record.AddressOf([]byte("echo")), r.Receipt.Script)
		assert.Contains(t, textOf(res), "The script returned:\n{\"a\":1,\"b\":2}\n")
	})
	t.Run("no input is null", func(t *testing.T) {
		_, r, err := call(t, cs, "run_javascript", map[string]any{"script": "echo"})
		require.NoError(t, err)
		assert.Equal(t, "null", string(r.Value))
	})
	t.Run("a thrown error is an error result the model reads", func(t *testing.T) {
		res, r, err := call(t, cs, "run_javascript", map[string]any{"script": "throw"})
		require.NoError(t, err, "a typed failure is no protocol error")
		assert.True(t, res.IsError)
		assert.False(t, r.OK)
		require.NotNil(t, r.Failure)
		assert.Equal(t, record.CodeScriptError, r.Failure.Code)
		assert.Equal(t, "TypeError", r.Failure.Name)
		assert.Equal(t, "boom", r.Failure.Message)
		assert.Contains(t, r.Hint, "fix the script")
		assert.Contains(t, textOf(res), "The script failed: scriptError: TypeError: boom")
		require.NotNil(t, r.Stats, "the record of a failed run is there too")
	})
	for _, c := range []struct {
		script string
		kind   record.LimitKind
		hint   string
	}{
		{"loop", record.LimitWallClock, "wall-clock limit of 5s"},
		{"memory", record.LimitMemory, "memory limit of 32 MiB"},
	} {
		t.Run(c.script, func(t *testing.T) {
			res, r, err := call(t, cs, "run_javascript", map[string]any{"script": c.script})
			require.NoError(t, err)
			assert.True(t, res.IsError)
			require.NotNil(t, r.Failure)
			assert.Equal(t, record.CodeLimitExceeded, r.Failure.Code)
			assert.Equal(t, c.kind, r.Failure.Kind)
			assert.Contains(t, r.Hint, c.hint)
			assert.Contains(t, textOf(res), "limitExceeded ("+c.kind.String()+")")
		})
	}
	t.Run("infrastructure is a protocol error", func(t *testing.T) {
		_, _, err := call(t, cs, "run_javascript", map[string]any{"script": "infra"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "infrastructure, retryable")
		assert.Contains(t, err.Error(), "fake-javascript")
	})
	t.Run("a call's limits reach the engine", func(t *testing.T) {
		_, r, err := call(t, cs, "run_javascript", map[string]any{"script": "echo", "limits": map[string]any{"timeoutMs": 250, "memoryBytes": 1 << 20}})
		require.NoError(t, err)
		require.NotNil(t, r.Receipt)
		assert.Equal(t, 250*time.Millisecond, r.Receipt.Limits.WallClock)
		assert.Equal(t, int64(1<<20), r.Receipt.Limits.MemoryBytes)
		f.mu.Lock()
		last := f.backends[0].LastRequest()
		f.mu.Unlock()
		assert.Equal(t, spi.Limits{WallClock: 250 * time.Millisecond, MemoryBytes: 1 << 20}, last.Limits)
	})
}

func TestRefusedArgumentsAreErrorResultsAndRunNothing(t *testing.T) {
	f := newFakes()
	cs := connect(t, newServer(t, f, &mcpserver.Options{Limits: spi.Limits{WallClock: 2 * time.Second}}, "javascript"), nil)
	for name, c := range map[string]struct {
		args any
		want string
	}{
		"no script":       {map[string]any{"input": 1}, `"script" is required`},
		"script a number": {map[string]any{"script": 3}, `"script" must be a string`},
		"unknown":         {map[string]any{"script": "echo", "code": "x"}, `unknown argument "code"`},
		"timeout above":   {map[string]any{"script": "echo", "limits": map[string]any{"timeoutMs": 2001}}, "above the server's wall-clock limit of 2000 ms"},
		"memory above":    {map[string]any{"script": "echo", "limits": map[string]any{"memoryBytes": effect.DefaultMemoryBytes + 1}}, "above the server's memory limit"},
		"timeout zero":    {map[string]any{"script": "echo", "limits": map[string]any{"timeoutMs": 0}}, "positive whole number"},
		"timeout float":   {map[string]any{"script": "echo", "limits": map[string]any{"timeoutMs": 1.5}}, `"limits.timeoutMs" must be a whole number`},
		"unknown limit":   {map[string]any{"script": "echo", "limits": map[string]any{"cpu": 1}}, `unknown argument "cpu"`},
	} {
		t.Run(name, func(t *testing.T) {
			res, r, err := call(t, cs, "run_javascript", c.args)
			require.NoError(t, err, "a refused argument is a result the model can correct, not a protocol error")
			assert.True(t, res.IsError)
			assert.Contains(t, r.InvalidCall, c.want)
			assert.Contains(t, textOf(res), "The call was refused: ")
			assert.Nil(t, r.Failure)
			assert.Nil(t, r.Stats)
		})
	}
	assert.Zero(t, f.calls(), "no refused call reached the engine")
}

func TestRefusedArgumentsQuoteAnExcerpt(t *testing.T) {
	f := newFakes()
	cs := connect(t, newServer(t, f, nil, "javascript"), nil)
	long := strings.Repeat("x", 1<<20)
	_, r, err := call(t, cs, "run_javascript", map[string]any{"script": "echo", long + "\x01": 1})
	require.NoError(t, err)
	assert.Contains(t, r.InvalidCall, "unknown argument")
	assert.Less(t, len(r.InvalidCall), 1024, "a 1 MiB argument name is quoted as an excerpt")
	assert.NotContains(t, r.InvalidCall, "\x01", "the excerpt is scrubbed")
}

func TestCancellationCancelsTheRun(t *testing.T) {
	f := newFakes()
	// The wall clock is far above the test's own bound: only the client's
	// cancellation can end the run in time.
	cs := connect(t, newServer(t, f, &mcpserver.Options{Limits: spi.Limits{WallClock: time.Hour}}, "javascript"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "block"}})
		done <- err
	}()
	select {
	case <-f.started:
	case <-time.After(testTimeout):
		t.Fatal("the run did not start")
	}
	cancel()
	select {
	case <-f.canceled: // the engine's context was cancelled: the run stopped
	case <-time.After(testTimeout):
		t.Fatal("the client's cancellation did not reach the run")
	}
	assert.ErrorIs(t, <-done, context.Canceled)

	// The session still works.
	_, r, err := call(t, cs, "run_javascript", map[string]any{"script": "echo", "input": 1})
	require.NoError(t, err)
	assert.Equal(t, "1", string(r.Value))
}

func TestProgressForALongRun(t *testing.T) {
	f := newFakes()
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	tick := make(chan struct{}, 64)
	cs := connect(t, newServer(t, f, &mcpserver.Options{ProgressInterval: 20 * time.Millisecond, Limits: spi.Limits{WallClock: time.Hour}}, "javascript"),
		&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
			tick <- struct{}{}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "block"}}
	params.SetProgressToken("tok-1")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	for range 2 {
		select {
		case <-tick:
		case <-time.After(testTimeout):
			t.Fatal("no progress notification")
		}
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(got), 2)
	assert.Equal(t, "tok-1", got[0].ProgressToken)
	assert.Greater(t, got[1].Progress, got[0].Progress, "progress grows")
	assert.Equal(t, time.Hour.Seconds(), got[0].Total)
	assert.Contains(t, got[0].Message, "wall-clock limit")
}

// TestNoProgressWithoutAToken: a call without a progress token hears of
// no progress. A second call with a token, started after it on the same
// server and session, is the clock: once it has heard of its run several
// times, the first call has lasted as many intervals.
func TestNoProgressWithoutAToken(t *testing.T) {
	f := newFakes()
	const heard = 5
	ticks := make(chan struct{}, heard)
	untokened := make(chan struct{}, 1)
	cs := connect(t, newServer(t, f, &mcpserver.Options{ProgressInterval: time.Millisecond, Limits: spi.Limits{WallClock: time.Hour}}, "javascript"),
		&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c := untokened
			if req.Params.ProgressToken == "tok" {
				c = ticks
			}
			select {
			case c <- struct{}{}:
			default:
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 2)
	call := func(params *mcp.CallToolParams) {
		go func() {
			_, err := cs.CallTool(ctx, params)
			done <- err
		}()
		select {
		case <-f.started:
		case <-time.After(testTimeout):
			t.Fatal("the run did not start")
		}
	}
	call(&mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "block"}})
	withToken := &mcp.CallToolParams{Name: "run_javascript", Arguments: map[string]any{"script": "block"}}
	withToken.SetProgressToken("tok")
	call(withToken)
	for range heard {
		select {
		case <-ticks:
		case <-time.After(testTimeout):
			t.Fatal("no progress notification for the call with a token")
		}
	}
	cancel()
	<-done
	<-done
	select {
	case <-untokened:
		t.Fatal("a call without a progress token heard of progress")
	default:
	}
}

func TestNewRefuses(t *testing.T) {
	f := newFakes()
	reg := f.registry("javascript", "starlark")
	netCaps := fakebackend.Capabilities()
	netCaps.Network = spi.NetworkOpen
	reg.Register(registry.Entry{Engine: "netjs", Language: "javascript", Capabilities: netCaps,
		Factory: func() (spi.Backend, error) { return fakebackend.New(netCaps, nil), nil }})
	for name, o := range map[string]*mcpserver.Options{
		"an unknown language":          {Languages: []string{"cobol"}},
		"a language the registry lack": {Languages: []string{"typescript"}},
		"an engine of another lang":    {Engines: map[string]string{"javascript": "fake-starlark"}},
		"an unknown engine":            {Engines: map[string]string{"javascript": "nope"}},
		"an engine of an unserved one": {Languages: []string{"javascript"}, Engines: map[string]string{"starlark": "fake-starlark"}},
		"an engine with network":       {Engines: map[string]string{"javascript": "netjs"}},
		"negative limits":              {Limits: spi.Limits{WallClock: -1}},
		"negative progress interval":   {ProgressInterval: -1},
		"negative host calls":          {MaxHostCalls: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mcpserver.New(reg, o)
			require.Error(t, err)
			assert.ErrorIs(t, err, mcpserver.ErrInvalidOptions)
			assert.ErrorIs(t, err, effect.ErrInvalidCall)
			assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
			assert.False(t, effect.Retryable(err))
		})
	}
	_, err := mcpserver.New(nil, nil)
	assert.ErrorIs(t, err, mcpserver.ErrInvalidOptions)
	assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
}

func TestEngineBuiltOnFirstCallAndRetriedAfterFailure(t *testing.T) {
	builds := 0
	caps := fakebackend.Capabilities()
	r := registry.New()
	r.Register(registry.Entry{Engine: "flaky", Language: "javascript", Capabilities: caps, Factory: func() (spi.Backend, error) {
		builds++
		if builds == 1 {
			return nil, errors.New("flaky: not today")
		}
		return fakebackend.New(caps, fakebackend.Echo()), nil
	}})
	srv, err := mcpserver.New(r, nil)
	require.NoError(t, err)
	assert.Zero(t, builds, "New builds no backend")
	cs := connect(t, srv, nil)
	_, _, err = call(t, cs, "run_javascript", map[string]any{"script": "x", "input": 1})
	require.Error(t, err, "an engine that cannot be built is infrastructure")
	assert.Contains(t, err.Error(), "flaky: not today")
	_, res, err := call(t, cs, "run_javascript", map[string]any{"script": "x", "input": 1})
	require.NoError(t, err)
	assert.Equal(t, "1", string(res.Value))
	assert.Equal(t, 2, builds)
}

func TestClosedServerAnswersWithAProtocolError(t *testing.T) {
	f := newFakes()
	srv := newServer(t, f, nil, "javascript")
	cs := connect(t, srv, nil)
	_, _, err := call(t, cs, "run_javascript", map[string]any{"script": "echo"})
	require.NoError(t, err)
	require.NoError(t, srv.Close())
	_, _, err = call(t, cs, "run_javascript", map[string]any{"script": "echo"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "closed")
}

func TestAdmitGrantsLimitsAndRefuses(t *testing.T) {
	f := newFakes()
	var released atomic.Int32
	errAtCap := errors.New("test: at the cap of concurrent runs")
	admit := func(_ context.Context, req *mcp.CallToolRequest, engine string) (mcpserver.Admission, error) {
		assert.Equal(t, "fake-javascript", engine)
		var a struct {
			Input string `json:"input"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &a)
		switch a.Input {
		case "forbidden":
			return mcpserver.Admission{}, fmt.Errorf("test: engine %s is not yours: %w", engine, effect.ErrInvalidCall)
		case "busy":
			return mcpserver.Admission{}, errAtCap
		}
		return mcpserver.Admission{Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 4 << 20}, Release: func() { released.Add(1) }}, nil
	}
	cs := connect(t, newServer(t, f, &mcpserver.Options{Admit: admit}, "javascript"), nil)

	_, r, err := call(t, cs, "run_javascript", map[string]any{"script": "echo", "input": "ok"})
	require.NoError(t, err)
	require.NotNil(t, r.Receipt)
	assert.Equal(t, spi.Limits{WallClock: time.Second, MemoryBytes: 4 << 20}, spi.Limits{WallClock: r.Receipt.Limits.WallClock, MemoryBytes: r.Receipt.Limits.MemoryBytes},
		"a call without limits runs at the admitted ceiling")
	assert.Equal(t, int32(1), released.Load())

	res, r, err := call(t, cs, "run_javascript", map[string]any{"script": "echo", "input": "ok", "limits": map[string]any{"timeoutMs": 1001}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, r.InvalidCall, "limit of 1000 ms", "the admitted ceiling bounds a call's limits")
	assert.Equal(t, int32(2), released.Load())

	res, r, err = call(t, cs, "run_javascript", map[string]any{"script": "echo", "input": "forbidden"})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, r.InvalidCall, "is not yours")

	_, _, err = call(t, cs, "run_javascript", map[string]any{"script": "echo", "input": "busy"})
	require.Error(t, err, "a caller at its cap is a protocol error")
	assert.Contains(t, err.Error(), "at the cap")
	assert.Equal(t, 1, f.calls(), "only the admitted call within its limits ran")
}

// TestALanguageRunsItsDefaultEngine: a tool runs its language's default
// engine (pool.Pool.Resolve, as every door), or the one Options.Engines
// chose. (The server used to prefer an engine that bounds memory over the
// default; the default of a language is now the registry's to set.)
func TestALanguageRunsItsDefaultEngine(t *testing.T) {
	soft := fakebackend.Capabilities()
	soft.Language, soft.Memory, soft.WallClock = "starlark", false, spi.WallClockSoft
	hard := fakebackend.Capabilities()
	hard.Language = "starlark"
	r := registry.New()
	for name, caps := range map[string]spi.Capabilities{"in-process": soft, "sealed": hard} {
		r.Register(registry.Entry{Engine: name, Language: "starlark", Capabilities: caps,
			Factory: func() (spi.Backend, error) { return fakebackend.New(caps, fakebackend.Echo()), nil }})
	}
	require.NoError(t, r.SetDefault("starlark", "sealed"))
	engineOf := func(o *mcpserver.Options) string {
		srv, err := mcpserver.New(r, o)
		require.NoError(t, err)
		cs := connect(t, srv, nil)
		_, res, err := call(t, cs, "run_starlark", map[string]any{"script": "x"})
		require.NoError(t, err)
		return res.Engine
	}
	assert.Equal(t, "sealed", engineOf(nil), "the default")
	assert.Equal(t, "in-process", engineOf(&mcpserver.Options{Engines: map[string]string{"starlark": "in-process"}}), "a chosen engine is served")
}

// TestAdmittedEnginesChooseTheEngine: a caller allowed only some engines
// runs the first of them that runs the tool's language, not a refusal.
func TestAdmittedEnginesChooseTheEngine(t *testing.T) {
	f := newFakes()
	admit := func(context.Context, *mcp.CallToolRequest, string) (mcpserver.Admission, error) {
		return mcpserver.Admission{Engines: []string{"fake-starlark"}}, nil
	}
	cs := connect(t, newServer(t, f, &mcpserver.Options{Admit: admit}, "javascript", "starlark"), nil)
	res, r, err := call(t, cs, "run_javascript", map[string]any{"script": "echo"})
	require.NoError(t, err)
	assert.True(t, res.IsError, "no allowed engine runs javascript")
	assert.Contains(t, r.InvalidCall, "no allowed engine")
	_, r, err = call(t, cs, "run_starlark", map[string]any{"script": "echo"})
	require.NoError(t, err)
	assert.Equal(t, "fake-starlark", r.Engine)
}
