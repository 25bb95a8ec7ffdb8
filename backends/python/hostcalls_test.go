//go:build linux

package python_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// heldHost is a broker that starts calls (spi.HostStarter) and answers
// none until n calls have started; then it answers them all, last issued
// first, each from a goroutine of its own. A runner that waited for one
// answer before issuing the next call would never get one.
type heldHost struct {
	n       int
	mu      sync.Mutex
	started []string // name(args), in the order started
	held    []func()
}

func (h *heldHost) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("heldHost: calls must be started")
}

func (h *heldHost) Start(_ context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started = append(h.started, name+"("+string(args)+")")
	h.held = append(h.held, func() {
		if name == "fails" {
			done(nil, fmt.Errorf("no %s", args))
			return
		}
		done(json.RawMessage(fmt.Sprintf(`{"name":%q,"args":%s}`, name, args)), nil)
	})
	if len(h.held) == h.n {
		for i := len(h.held) - 1; i >= 0; i-- {
			go h.held[i]()
		}
	}
}

// callHost is a broker without Start: each call is answered at once.
type callHost struct{}

func (callHost) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"args":%s}`, name, args)), nil
}

// TestHostCallsInFlightAtOnce: inside a running event loop a host call
// returns an awaitable at once, so a script has several in flight; their
// answers arrive in any order and each settles its own call. A
// synchronous call made meanwhile (from a thread) gets its own answer, a
// timer waits for the calls in flight, and a broker without Start
// answers the same script one call at a time.
func TestHostCallsInFlightAtOnce(t *testing.T) {
	b := newBackend(t)
	for _, tc := range []struct {
		name, script string
		host         spi.Host
		want         string
	}{
		{name: "gather", host: &heldHost{n: 3},
			script: "import asyncio\nasync def main():\n    return await asyncio.gather(host.a(1), host.b(2), host.c(3))\nawait main()",
			want:   `[{"name":"a","args":1},{"name":"b","args":2},{"name":"c","args":3}]`},
		{name: "an error settles its own call", host: &heldHost{n: 2},
			script: "import asyncio\nasync def main():\n    r = await asyncio.gather(host.a(1), host.fails(2), return_exceptions=True)\n    return [r[0], type(r[1]).__name__, str(r[1])]\nawait main()",
			want:   `[{"name":"a","args":1},"HostError","no 2"]`},
		{name: "a synchronous call from a thread", host: &heldHost{n: 2},
			script: "import asyncio\nasync def main():\n    return await asyncio.gather(host.a(1), asyncio.to_thread(lambda: host.b(2)))\nawait main()",
			want:   `[{"name":"a","args":1},{"name":"b","args":2}]`},
		{name: "a timer waits for the calls in flight", host: &heldHost{n: 2},
			script: "import asyncio, time\nasync def main():\n    t = time.monotonic()\n    r = await asyncio.gather(host.a(1), asyncio.sleep(5), host.b(2))\n    return [r[0], r[2], time.monotonic() - t >= 5]\nawait main()",
			want:   `[{"name":"a","args":1},{"name":"b","args":2},true]`},
		{name: "a broker without Start", host: callHost{},
			script: "import asyncio\nasync def main():\n    return await asyncio.gather(host.a(1), host.b(2))\nawait main()",
			want:   `[{"name":"a","args":1},{"name":"b","args":2}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := b.Evaluate(context.Background(), spi.Request{
				Script: []byte(tc.script), Input: json.RawMessage("null"), Host: tc.host,
				Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20},
			})
			require.NoError(t, err)
			require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
			assert.JSONEq(t, tc.want, string(out.Value))
		})
	}
}
