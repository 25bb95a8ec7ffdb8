package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/codemode"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/mcpserver"
)

// dialer returns ConnectUpstream's dial to u's server over in-memory
// transports, and the count of its dials: the upstream's starts.
func (u *upstream) dialer(t *testing.T) (dial func() mcp.Transport, starts func() int) {
	var mu sync.Mutex
	n := 0
	dial = func() mcp.Transport {
		mu.Lock()
		n++
		mu.Unlock()
		st, ct := mcp.NewInMemoryTransports()
		ss, err := u.srv.Connect(context.Background(), u.wrap(st), nil)
		if err != nil {
			panic(err) // an in-memory transport does not fail to connect
		}
		t.Cleanup(func() { _ = ss.Close() })
		return ct
	}
	return dial, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// connectUp connects upstream "up" to u on clk.
func connectUp(t *testing.T, u *upstream, clk *clock) (*codemode.Upstream, func() int) {
	t.Helper()
	dial, starts := u.dialer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	up, err := codemode.ConnectUpstreamAt(ctx, "up", dial, nil, clk.Now)
	require.NoError(t, err)
	t.Cleanup(func() { _ = up.Close() })
	return up, starts
}

// callUp calls host function up__TOOL and returns its answer, or the
// code of its *UpstreamError.
func callUp(t *testing.T, up *codemode.Upstream, tool, args string) (json.RawMessage, codemode.UpstreamCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fn := up.HostFuncs()["up__"+tool]
	require.NotNil(t, fn, "up__%s", tool)
	v, err := fn(ctx, json.RawMessage(args))
	if err != nil {
		var ue *codemode.UpstreamError
		require.True(t, errors.As(err, &ue), "%v", err)
		return nil, ue.Code
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b, 0
}

// An upstream whose session ends while idle (its process exited) is
// started again by the next call, which succeeds.
func TestUpstreamRestartedAfterItEnded(t *testing.T) {
	u := newUpstream()
	up, starts := connectUp(t, u, &clock{now: time.Now()})
	v, code := callUp(t, up, "item", `{"id":1}`)
	require.Zero(t, code)
	assert.JSONEq(t, `{"id":1,"name":"item-1"}`, string(v))

	u.mu.Lock()
	require.NoError(t, u.conn.Close())
	u.mu.Unlock()
	waitSignal(t, codemode.SessionDone(up), "the upstream's session to end")

	v, code = callUp(t, up, "item", `{"id":2}`)
	require.Zero(t, code, "the call starts the upstream again")
	assert.JSONEq(t, `{"id":2,"name":"item-2"}`, string(v))
	assert.Equal(t, 2, starts())
}

// The call that finds the upstream dead fails typed; the next starts it
// again. A session that answered no call makes the next start wait,
// doubling up to the cap; a call in the wait starts nothing.
func TestUpstreamRestartBackoff(t *testing.T) {
	clk := &clock{now: time.Unix(1e9, 0)}
	up, starts := connectUp(t, newUpstream(), clk)
	_, code := callUp(t, up, "item", `{"id":1}`)
	require.Zero(t, code)

	// The session answered a call: the one that finds it dead fails,
	// the next starts it again at once.
	_, code = callUp(t, up, "die", `{}`)
	assert.Equal(t, codemode.UpstreamUnavailable, code)
	_, code = callUp(t, up, "die", `{}`)
	assert.Equal(t, codemode.UpstreamUnavailable, code)
	require.Equal(t, 2, starts(), "started again at once")

	// That session answered none: no start for MinUpstreamRestartDelay.
	for range 5 {
		_, code = callUp(t, up, "item", `{"id":1}`)
		assert.Equal(t, codemode.UpstreamUnavailable, code)
	}
	require.Equal(t, 2, starts(), "no start within the wait")
	clk.advance(codemode.MinUpstreamRestartDelay)
	_, code = callUp(t, up, "die", `{}`)
	assert.Equal(t, codemode.UpstreamUnavailable, code)
	require.Equal(t, 3, starts())

	// Two in a row: the wait doubles.
	clk.advance(codemode.MinUpstreamRestartDelay)
	_, code = callUp(t, up, "item", `{"id":1}`)
	assert.Equal(t, codemode.UpstreamUnavailable, code)
	require.Equal(t, 3, starts())
	clk.advance(codemode.MinUpstreamRestartDelay)
	v, code := callUp(t, up, "item", `{"id":3}`)
	require.Zero(t, code, "started again once the wait is over")
	assert.JSONEq(t, `{"id":3,"name":"item-3"}`, string(v))
	require.Equal(t, 4, starts())

	assert.Equal(t, time.Duration(0), codemode.RestartDelay(0))
	assert.Equal(t, 4*codemode.MinUpstreamRestartDelay, codemode.RestartDelay(3))
	assert.Equal(t, codemode.MaxUpstreamRestartDelay, codemode.RestartDelay(1000))

	// Closed: no call starts it again.
	require.NoError(t, up.Close())
	_, code = callUp(t, up, "item", `{"id":1}`)
	assert.Equal(t, codemode.UpstreamUnavailable, code)
	assert.Equal(t, 4, starts())
}

// When an upstream's tools change (notifications/tools/list_changed),
// the server lists them again: its clients hear that its tools changed,
// the run tools' descriptions declare the new tool, and scripts call it.
func TestUpstreamToolListChanged(t *testing.T) {
	u := newUpstream()
	up, _ := connectUp(t, u, &clock{now: time.Now()})
	srv, err := mcpserver.New(gojaRegistry(t), &mcpserver.Options{Host: hostOf(t, up)})
	require.NoError(t, err)
	changed := make(chan struct{}, 16)
	cs := connect(t, srv, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	description := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		tools, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		for _, tool := range tools.Tools {
			if tool.Name == "run_javascript" {
				return tool.Description
			}
		}
		return ""
	}
	require.NotContains(t, description(), "up__added")

	u.srv.AddTool(&mcp.Tool{Name: "added", Description: "Added after the start.", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added"}}}, nil
		})
	// The SDK may have told the client of the tools New added (it
	// debounces): wait for the notification after which they declare
	// the new tool.
	for !strings.Contains(description(), "up__added") {
		waitSignal(t, changed, "the server's tools/list_changed")
	}
	assert.Contains(t, description(), "function up__added(args: {\n    n?: number;\n  }): Promise<unknown>;")
	assert.Contains(t, description(), "Added after the start.")
	r := runJS(t, cs, `await host.up__added({ n: 1 })`, nil)
	require.True(t, r.OK, "%+v", r)
	assert.Equal(t, `"added"`, string(r.Value))
}

// An upstream error's kind says whether the same call may do better
// later: a down upstream may be started again, a refusal is the same.
func TestUpstreamErrorKinds(t *testing.T) {
	for code, kind := range map[codemode.UpstreamCode]effect.Kind{
		codemode.UpstreamUnavailable:      effect.KindInfrastructure,
		codemode.UpstreamTimeout:          effect.KindInfrastructure,
		codemode.UpstreamMalformed:        effect.KindInfrastructure,
		codemode.UpstreamRefused:          effect.KindInvalidCall,
		codemode.UpstreamToolError:        effect.KindInvalidCall,
		codemode.UpstreamInvalidArguments: effect.KindInvalidCall,
		codemode.UpstreamTooLarge:         effect.KindInvalidCall,
	} {
		err := &codemode.UpstreamError{Upstream: "up", Tool: "t", Code: code}
		assert.Equal(t, kind, effect.KindOf(err), "%s", code)
		assert.Equal(t, kind.Retryable(), effect.Retryable(err), "%s", code)
	}
}
