package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// testRegistry holds goja (the default of javascript), starlark and
// quickjs: cheap engines, and one wasm engine for a slice of the load.
func testRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	r := registry.New()
	add := func(name string, f spi.Factory) {
		b, err := f()
		require.NoError(t, err)
		caps := b.Capabilities()
		if c, ok := b.(io.Closer); ok {
			require.NoError(t, c.Close())
		}
		r.Register(registry.Entry{Engine: name, Language: caps.Language, Capabilities: caps, Factory: f, Description: name + " for tests"})
	}
	add("goja", func() (spi.Backend, error) { return goja.New(nil) })
	add("starlark", func() (spi.Backend, error) { return starlark.New(nil) })
	add("quickjs", func() (spi.Backend, error) { return quickjs.New(nil) })
	require.NoError(t, r.SetDefault("javascript", "goja"))
	return r
}

// live is a Server serving on 127.0.0.1.
type live struct {
	*Server
	url  string
	done chan error
}

func startServer(t testing.TB, reg *registry.Registry, opts *Options) *live {
	t.Helper()
	s, err := New(reg, opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &live{Server: s, url: "http://" + ln.Addr().String(), done: make(chan error, 1)}
	go func() { l.done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-l.done
	})
	return l
}

// post sends body as JSON with the key (none when empty) and returns the
// status and the decoded body.
func post(t testing.TB, c *http.Client, url, key string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &out), "body %s", raw)
	return resp.StatusCode, resp.Header, out
}

func newLoopbackListener() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// dataIn opens the data directory dir with o (nil: defaults) for a
// server, which closes it; the test's cleanup closes it too, in case no
// server did.
func dataIn(t testing.TB, dir string, o *storage.DataOptions) *storage.Data {
	t.Helper()
	var do storage.DataOptions
	if o != nil {
		do = *o
	}
	do.Dir = dir
	d, err := storage.OpenData(&do)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}
