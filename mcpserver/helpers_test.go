package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/internal/mcptest"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// testTimeout bounds every wait of these tests: far above what any step
// takes on a loaded machine, so that only a hang reaches it.
const testTimeout = 30 * time.Second

// fakes is a registry of fake engines whose scripts are directives:
//
//	echo     the input is the value
//	throw    a thrown TypeError "boom"
//	loop     the wall-clock limit
//	memory   the memory limit
//	infra    a Go error: infrastructure
//	block    waits for its context (at most 2×testTimeout), and reports
//	         whether it was cancelled
//	gate     waits for f.gate to close (or its context), then returns
//	         "gated" unless its context was cancelled
type fakes struct {
	mu       sync.Mutex
	backends []*fakebackend.Backend
	// canceled receives one value per "block" run whose context was
	// cancelled.
	canceled chan struct{}
	// started receives one value per "block" or "gate" run, when it
	// starts.
	started chan struct{}
	// gate is closed to let "gate" runs end.
	gate chan struct{}
}

func newFakes() *fakes {
	return &fakes{canceled: make(chan struct{}, 16), started: make(chan struct{}, 16), gate: make(chan struct{})}
}

func (f *fakes) behave(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	switch strings.TrimSpace(string(req.Script)) {
	case "echo":
		return spi.OK(req.Input), nil
	case "throw":
		return spi.Threw("TypeError", "boom"), nil
	case "loop":
		return spi.Limited(spi.LimitWallClock), nil
	case "memory":
		return spi.Limited(spi.LimitMemory), nil
	case "infra":
		return spi.Outcome{}, errors.New("fake: the disk is on fire")
	case "block":
		f.started <- struct{}{}
		select {
		case <-ctx.Done():
			f.canceled <- struct{}{}
			return spi.Outcome{}, ctx.Err()
		case <-time.After(2 * testTimeout):
			// Never reached unless cancellation is broken; then the test
			// has failed already, and this lets its session close.
			return spi.OK(json.RawMessage(`"late"`)), nil
		}
	case "gate":
		f.started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-f.gate:
		}
		if ctx.Err() != nil {
			f.canceled <- struct{}{}
			return spi.Outcome{}, ctx.Err()
		}
		return spi.OK(json.RawMessage(`"gated"`)), nil
	}
	return spi.Threw("SyntaxError", "unknown directive"), nil
}

func (f *fakes) factory(lang string) spi.Factory {
	return func() (spi.Backend, error) {
		caps := fakebackend.Capabilities()
		caps.Language = lang
		b := fakebackend.New(caps, f.behave)
		f.mu.Lock()
		f.backends = append(f.backends, b)
		f.mu.Unlock()
		return b, nil
	}
}

// calls counts the Evaluate calls of every fake backend built so far.
func (f *fakes) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.backends {
		n += b.Calls()
	}
	return n
}

// registry returns a registry with a fake engine for each language.
func (f *fakes) registry(langs ...string) *registry.Registry {
	r := registry.New()
	for _, lang := range langs {
		caps := fakebackend.Capabilities()
		caps.Language = lang
		r.Register(registry.Entry{Engine: "fake-" + lang, Language: lang, Capabilities: caps, Factory: f.factory(lang)})
		if err := r.SetDefault(lang, "fake-"+lang); err != nil {
			panic(err)
		}
	}
	return r
}

// connect serves srv on an in-memory transport and returns a client
// session to it (mcptest.Connect).
func connect(t *testing.T, srv *mcpserver.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, srv, copts)
}

// newServer builds a server over f's fake engines of langs.
func newServer(t *testing.T, f *fakes, opts *mcpserver.Options, langs ...string) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(f.registry(langs...), opts)
	require.NoError(t, err)
	return srv
}

// call calls a tool with args and returns its result and its structured
// content decoded.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) (*mcp.CallToolResult, mcpserver.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	var r mcpserver.Result
	if err == nil && res.StructuredContent != nil {
		b, merr := json.Marshal(res.StructuredContent)
		require.NoError(t, merr)
		require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	}
	return res, r, err
}

// textOf returns the text content of a result.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
