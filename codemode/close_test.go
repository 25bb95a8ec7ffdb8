package codemode_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/codemode"
)

// errSessionClose is what closing failClose's connection returns.
var errSessionClose = errors.New("the session did not end cleanly")

// failClose is a client transport whose connection's Close returns
// errSessionClose (after closing it): a process that exits with a status
// other than zero, an HTTP session that fails to end.
type failClose struct{ mcp.Transport }

func (f failClose) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := f.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return failCloseConn{c}, nil
}

type failCloseConn struct{ mcp.Connection }

func (c failCloseConn) Close() error { return errors.Join(c.Connection.Close(), errSessionClose) }

// Upstream.Close returns what closing its session returned; a second
// Close returns nil.
func TestUpstreamCloseReturnsItsSessionsError(t *testing.T) {
	dial, _ := newUpstream().dialer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	up, err := codemode.ConnectUpstream(ctx, "up", func() mcp.Transport { return failClose{dial()} }, nil)
	require.NoError(t, err)
	err = up.Close()
	require.ErrorIs(t, err, errSessionClose)
	assert.Contains(t, err.Error(), "codemode: upstream up: closing its session")
	assert.NoError(t, up.Close(), "a second Close")
}

// blockConnect is a client transport whose Connect waits for its context
// to end, and says when it starts and when it returns.
type blockConnect struct {
	started, returned chan struct{}
}

func (b blockConnect) Connect(ctx context.Context) (mcp.Connection, error) {
	close(b.started)
	<-ctx.Done()
	close(b.returned)
	return nil, ctx.Err()
}

// Upstream.Close waits for what the upstream started: the goroutine
// that watched its session has ended, and a start in progress (a call's,
// after the session ended) is cancelled and has returned, before Close
// returns. Nothing of the upstream runs after Close.
func TestUpstreamCloseWaitsForWhatItStarted(t *testing.T) {
	u := newUpstream()
	dial, _ := u.dialer(t)
	block := blockConnect{started: make(chan struct{}), returned: make(chan struct{})}
	var blocking atomic.Bool
	up, err := codemode.ConnectUpstreamAt(t.Context(), "up", func() mcp.Transport {
		if blocking.Load() {
			return block
		}
		return dial()
	}, nil, time.Now)
	require.NoError(t, err)
	_, code := callUp(t, up, "item", `{"id":1}`)
	require.Zero(t, code, "the session answered: the next start need not wait")

	// The session ends; the next call starts another, whose connection
	// hangs until its context ends.
	first := codemode.SessionDone(up)
	u.mu.Lock()
	require.NoError(t, u.conn.Close())
	u.mu.Unlock()
	waitSignal(t, first, "the upstream's session to end")
	blocking.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel() // without Close's cancellation, the start ends here
	called := make(chan codemode.UpstreamCode, 1)
	go func() {
		_, err := up.HostFuncs()["up__item"](ctx, []byte(`{"id":2}`))
		var ue *codemode.UpstreamError
		if errors.As(err, &ue) {
			called <- ue.Code
			return
		}
		called <- 0
	}()
	waitSignal(t, block.started, "the start to connect")

	require.NoError(t, up.Close())
	select {
	case <-block.returned:
	default:
		t.Fatal("Close returned while a start it should have cancelled was still connecting")
	}
	assert.Equal(t, codemode.UpstreamUnavailable, <-called)
}

// When Close returns, the goroutine that watched the session in use has
// ended: the session's end is known.
func TestUpstreamCloseEndsItsWatcher(t *testing.T) {
	up, _ := connectUp(t, newUpstream(), &clock{now: time.Now()})
	done := codemode.SessionDone(up)
	require.NoError(t, up.Close())
	select {
	case <-done:
	default:
		t.Fatal("Close returned before the goroutine watching its session ended")
	}
}
