package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/spi"
)

// slowWarm is a backend whose Warm returns once reading has started (or
// after a bound, so that a server that warms first is not held forever):
// a server that reads before its engines are warm sees warmed false.
type slowWarm struct {
	*fakebackend.Backend
	readStarted chan struct{}
	warmed      *atomic.Bool
}

func (s slowWarm) Warm(ctx context.Context) error {
	select {
	case <-s.readStarted:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	s.warmed.Store(true)
	return nil
}

// firstRead records whether the engines were warm when the server first
// read its input, then ends the input.
type firstRead struct {
	readStarted chan struct{}
	warmed      *atomic.Bool
	warmAtRead  atomic.Bool
	started     atomic.Bool
}

func (r *firstRead) Read([]byte) (int, error) {
	if !r.started.Swap(true) {
		r.warmAtRead.Store(r.warmed.Load())
		close(r.readStarted)
	}
	return 0, io.EOF
}

// TestMCPWarmsBeforeItReads: mcp warms the engines it offers before it
// reads its first message, so that message's run does not wait for them.
func TestMCPWarmsBeforeItReads(t *testing.T) {
	warmed := new(atomic.Bool)
	in := &firstRead{readStarted: make(chan struct{}), warmed: warmed}
	caps := fakebackend.Capabilities()
	a := &app{
		newRegistry: func() (*registry.Registry, error) {
			r := new(registry.Registry)
			r.Register(registry.Entry{Engine: "fake", Language: caps.Language, Capabilities: caps,
				Factory: func() (spi.Backend, error) {
					return slowWarm{fakebackend.New(caps, directive), in.readStarted, warmed}, nil
				}})
			return r, nil
		},
		fixtures: func(string) (*fixtures.Set, bool) { return nil, false },
	}
	var out, errb bytes.Buffer
	a.stdin, a.stdout, a.stderr = in, &out, &errb
	require.Equal(t, exitOK, a.execute([]string{"mcp", "--quiet", "--engine", "fake"}), errb.String())
	require.True(t, in.started.Load(), "the server read its input")
	assert.True(t, in.warmAtRead.Load(), "the engines were warm before the first read")
}

// TestWarmServer: serve's warm-up builds and warms every engine in the
// server's own pool, which keeps it for the first request (it is closed
// with the server, not before), and a failing one is logged, not fatal.
func TestWarmServer(t *testing.T) {
	caps := fakebackend.Capabilities()
	var built []*fakebackend.Backend
	r := new(registry.Registry)
	r.Register(registry.Entry{Engine: "good", Language: caps.Language, Capabilities: caps,
		Factory: func() (spi.Backend, error) {
			b := fakebackend.New(caps, directive)
			built = append(built, b)
			return b, nil
		}})
	r.Register(registry.Entry{Engine: "broken", Language: caps.Language, Capabilities: caps,
		Factory: func() (spi.Backend, error) { return nil, errors.New("fake: cannot start") }})
	srv, err := server.New(r, &server.Options{})
	require.NoError(t, err)
	var log bytes.Buffer
	warmServer(context.Background(), srv, slog.New(slog.NewTextHandler(&log, nil)))
	require.Len(t, built, 1)
	c := built[0].Counts()
	assert.Equal(t, 1, c.Warms)
	assert.Equal(t, 0, c.Closes, "the warmed engine is the one the server runs")
	assert.Contains(t, log.String(), "broken")
	assert.Contains(t, log.String(), "engines warmed")
	require.NoError(t, srv.Close())
	assert.Equal(t, 1, built[0].Counts().Closes)
}
