package extism

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/storage"
)

// countingServer starts an HTTP server on host (any port) that counts the
// requests it answers, and returns its base URL.
func countingServer(t *testing.T, host string) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on loopback address %s: %v", host, err)
	}
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("canary"))
	}))
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

// TestAllowlistEndToEnd: a backend with an allowed host declares Network
// allowlist; the effect refuses it unless AllowNetwork; with it, the
// probe reaches the allowed host and only that host.
func TestAllowlistEndToEnd(t *testing.T) {
	allowed, allowedHits := countingServer(t, "127.0.0.1")
	other, otherHits := countingServer(t, "127.0.0.2")
	// Precondition: the other server is reachable from this process, so
	// that zero requests below means refused, not unreachable.
	resp, err := http.Get(other + "/precondition")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, int64(1), otherHits.Swap(0))

	b, err := New(&Options{AllowedHosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	defer b.Close()
	scripts := new(storage.MemoryStore)
	probe, err := scripts.Put(fixture(t, "no_network"))
	require.NoError(t, err)

	_, err = effect.New(scripts, b, nil)
	require.Error(t, err, "the effect accepted a backend with network access without AllowNetwork")
	assert.Contains(t, err.Error(), "network allowlist")
	assert.Contains(t, err.Error(), "AllowNetwork")

	e, err := effect.New(scripts, b, &effect.Options{AllowNetwork: true})
	require.NoError(t, err)
	defer e.Close()
	assert.False(t, e.Idempotent(), "a backend with network access is not idempotent")
	ctx := context.Background()

	out, err := e.Evaluate(ctx, effect.Call{Script: probe, Input: map[string]string{"url": allowed + "/canary"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"tried":["http_request"],"reached":["http_request"]}`, string(out))
	assert.Equal(t, int64(1), allowedHits.Load())

	out, err = e.Evaluate(ctx, effect.Call{Script: probe, Input: map[string]string{"url": other + "/canary"}})
	var f *effect.Failure
	require.True(t, errors.As(err, &f), "want a typed failure, got %v (%s)", err, out)
	assert.Equal(t, record.CodeScriptError, f.Code)
	assert.Equal(t, NameTrap, f.Name)
	assert.Contains(t, f.Message, "is not allowed")
	assert.Zero(t, otherHits.Load(), "a host that is not allowed saw a request")
}

// TestAllowlistIsByHostName records the SDK's matching rule: a host name
// allows every port of that host. (Use distinct host names, not ports, to
// separate services.)
func TestAllowlistIsByHostName(t *testing.T) {
	_, _ = countingServer(t, "127.0.0.1")
	otherPort, otherHits := countingServer(t, "127.0.0.1")
	b := newTestBackend(t, &Options{AllowedHosts: []string{"127.0.0.1"}})
	in, err := json.Marshal(map[string]string{"url": otherPort + "/x"})
	require.NoError(t, err)
	got, err := eval(t, b, fixture(t, "no_network"), string(in), testLimits)
	require.NoError(t, err)
	assert.JSONEq(t, `{"tried":["http_request"],"reached":["http_request"]}`, string(got.Value))
	assert.Equal(t, int64(1), otherHits.Load())
}

// TestSubdomainPattern: "*.example.test" allows sub-domains and nothing
// else; a refused name never reaches the resolver or the network.
func TestSubdomainPattern(t *testing.T) {
	b := newTestBackend(t, &Options{AllowedHosts: []string{"*.sandbank.invalid"}})
	got, err := eval(t, b, fixture(t, "no_network"), `{"url":"http://127.0.0.1:9/x"}`, testLimits)
	require.NoError(t, err)
	assert.Equal(t, NameTrap, got.Name)
	assert.Contains(t, got.Message, "is not allowed")
}
