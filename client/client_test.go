package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/client"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/tenant"
)

func testRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	r := registry.New()
	for name, f := range map[string]spi.Factory{
		"goja":     func() (spi.Backend, error) { return goja.New(nil) },
		"starlark": func() (spi.Backend, error) { return starlark.New(nil) },
	} {
		b, err := f()
		require.NoError(t, err)
		caps := b.Capabilities()
		if c, ok := b.(io.Closer); ok {
			_ = c.Close()
		}
		r.Register(registry.Entry{Engine: name, Language: caps.Language, Capabilities: caps, Factory: f})
	}
	return r
}

// serve starts a real server on 127.0.0.1 and returns its URL.
func serve(t testing.TB, opts *server.Options) string {
	t.Helper()
	s, err := server.New(testRegistry(t), opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return "http://" + ln.Addr().String()
}

func tenants(t testing.TB) (set *tenant.Set, keyA, keyB string) {
	t.Helper()
	keyA, dA, err := tenant.NewKey()
	require.NoError(t, err)
	keyB, dB, err := tenant.NewKey()
	require.NoError(t, err)
	set, err = tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"a","keys":[%q]},{"name":"b","keys":[%q],"engines":["starlark"],"maxConcurrentRuns":1,"ratePerSecond":0.001,"burst":3}]}`, dA, dB))
	require.NoError(t, err)
	return set, keyA, keyB
}

func TestTheThreeKindsCrossTheWire(t *testing.T) {
	set, keyA, keyB := tenants(t)
	url := serve(t, &server.Options{Tenants: set})
	a, err := client.New(url, &client.Options{APIKey: keyA})
	require.NoError(t, err)
	ctx := context.Background()

	// A value.
	rec, err := a.Run(ctx, client.Run{Language: "javascript", Engine: "goja", Source: "input.n * 2", Input: map[string]int{"n": 21}})
	require.NoError(t, err)
	assert.JSONEq(t, "42", string(rec.Value))
	assert.Equal(t, "goja", rec.Receipt.Engine)
	require.NoError(t, receipt.Verify(rec, []byte("input.n * 2"), map[string]int{"n": 21}), "the record verifies on this side of the wire")

	// Bytes travel in base64 (sourceBase64): the receipt names the same
	// script.
	rec, err = a.Run(ctx, client.Run{Engine: "goja", Binary: []byte("40 + 2")})
	require.NoError(t, err)
	assert.JSONEq(t, "42", string(rec.Value))
	assert.Equal(t, record.AddressOf([]byte("40 + 2")), rec.Receipt.Script)

	// Typed failures: errors.As and the code's sentinel work.
	rec, err = a.Run(ctx, client.Run{Engine: "goja", Source: "throw new TypeError('no')"})
	var f *effect.Failure
	require.ErrorAs(t, err, &f)
	assert.Equal(t, record.CodeScriptError, f.Code)
	assert.Equal(t, "TypeError", f.Name)
	assert.ErrorIs(t, err, effect.ErrScriptError)
	require.NotNil(t, rec)
	assert.Same(t, rec.Failure, f)
	assert.NotErrorIs(t, err, effect.ErrInvalidCall)
	assert.NotErrorIs(t, err, client.ErrRetryable)

	_, err = a.Run(ctx, client.Run{Engine: "goja", Source: "for(;;){}", Limits: spi.Limits{WallClock: 200 * time.Millisecond}})
	require.ErrorAs(t, err, &f)
	assert.Equal(t, record.CodeLimitExceeded, f.Code)
	assert.Equal(t, record.LimitWallClock, f.Kind)
	assert.ErrorIs(t, err, effect.ErrLimitExceeded)

	_, err = a.Run(ctx, client.Run{Engine: "goja", Source: "1", Shape: []byte(`{"type":"string"}`)})
	assert.ErrorIs(t, err, effect.ErrShapeMismatch)

	// Invalid calls: not retryable, matching effect.ErrInvalidCall.
	for name, r := range map[string]client.Run{
		"unknown engine":  {Engine: "nope", Source: "1"},
		"no engine":       {Source: "1"},
		"invalid shape":   {Engine: "goja", Source: "1", Shape: []byte(`{"type":7}`)},
		"above ceiling":   {Engine: "goja", Source: "1", Limits: spi.Limits{WallClock: time.Hour}},
		"wrong language":  {Engine: "goja", Language: "starlark", Source: "1"},
		"unknown address": {Engine: "goja", Script: record.AddressOf([]byte("never stored"))},
	} {
		_, err := a.Run(ctx, r)
		var ce *client.Error
		require.ErrorAs(t, err, &ce, name)
		assert.False(t, ce.Retryable, name)
		assert.ErrorIs(t, err, effect.ErrInvalidCall, name)
		assert.NotErrorIs(t, err, client.ErrRetryable, name)
		assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err), name)
		assert.False(t, effect.Retryable(err), name)
	}
	_, err = a.Run(ctx, client.Run{Engine: "goja", Script: record.AddressOf([]byte("never stored"))})
	assert.ErrorIs(t, err, client.ErrNotFound)

	// Scripts are per tenant: b cannot run a's script by address.
	addr, err := a.Store(ctx, []byte("def main(input):\n    return input\n"))
	require.NoError(t, err)
	again, err := a.Store(ctx, []byte("def main(input):\n    return input\n"))
	require.NoError(t, err)
	assert.Equal(t, addr, again, "storing is idempotent")
	b, err := client.New(url, &client.Options{APIKey: keyB})
	require.NoError(t, err)
	_, err = b.Run(ctx, client.Run{Engine: "starlark", Script: addr})
	assert.ErrorIs(t, err, client.ErrNotFound)
	rec, err = a.Run(ctx, client.Run{Engine: "starlark", Script: addr, Input: []int{1}})
	require.NoError(t, err)
	assert.JSONEq(t, "[1]", string(rec.Value))

	// b may not use goja.
	_, err = b.Run(ctx, client.Run{Engine: "goja", Source: "1"})
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, http.StatusForbidden, ce.Status)
	engines, err := b.Engines(ctx)
	require.NoError(t, err)
	require.Len(t, engines, 1)
	assert.Equal(t, "starlark", engines[0].Engine)

	// b's bucket held 3 tokens and refills once in 1000 s: the next
	// request is a retryable 429 with Retry-After.
	_, err = b.Run(ctx, client.Run{Engine: "starlark", Source: "1"})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, http.StatusTooManyRequests, ce.Status)
	assert.True(t, ce.Retryable)
	assert.Greater(t, ce.RetryAfter, time.Minute)
	assert.ErrorIs(t, err, client.ErrRetryable)
	assert.NotErrorIs(t, err, effect.ErrInvalidCall)
	assert.ErrorIs(t, err, effect.ErrQuota)
	assert.Equal(t, effect.KindQuota, effect.KindOf(err), "the tenant's quota, as every door answers it")
	assert.True(t, effect.Retryable(err))

	// No key, a wrong key: 401.
	for _, key := range []string{"", "sbk_" + "x0123456789012345678901234567890123456789"} {
		c, err := client.New(url, &client.Options{APIKey: key})
		require.NoError(t, err)
		_, err = c.Run(ctx, client.Run{Engine: "goja", Source: "1"})
		assert.ErrorIs(t, err, client.ErrUnauthorized)
		assert.ErrorIs(t, err, effect.ErrInvalidCall)
	}
}

func TestConnectionErrorsAreRetryable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := client.New(url, nil)
	require.NoError(t, err)
	_, err = c.Run(context.Background(), client.Run{Engine: "goja", Source: "1"})
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.True(t, ce.Retryable)
	assert.ErrorIs(t, err, client.ErrRetryable)
	assert.NotErrorIs(t, err, effect.ErrInvalidCall)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Run(ctx, client.Run{Engine: "goja", Source: "1"})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestRunRefusesTwoScripts(t *testing.T) {
	c, err := client.New("http://127.0.0.1:1", nil)
	require.NoError(t, err)
	for _, r := range []client.Run{
		{Engine: "goja", Source: "1", Script: record.AddressOf([]byte("1"))},
		{Engine: "goja", Source: "1", Binary: []byte("1")},
		{Engine: "goja", Binary: []byte("1"), Script: record.AddressOf([]byte("1"))},
		{Engine: "goja", Source: "1", Limits: spi.Limits{WallClock: 1500 * time.Microsecond}},
		{Engine: "goja", Source: "1", Input: func() {}},
	} {
		_, err := c.Run(context.Background(), r)
		assert.ErrorIs(t, err, effect.ErrInvalidCall)
	}
}

func TestNewRefusesABadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "127.0.0.1:80", "http://"} {
		_, err := client.New(u, nil)
		assert.True(t, errors.Is(err, effect.ErrInvalidCall), u)
	}
}

// TestErrorKinds: an error response classifies with effect.KindOf as the
// server's kind says: an overloaded server is KindOverloaded, a tenant
// over its quota KindQuota, both retryable.
func TestErrorKinds(t *testing.T) {
	for _, c := range []struct {
		e    *client.Error
		want effect.Kind
	}{
		{&client.Error{Status: http.StatusServiceUnavailable, Kind: "overloaded", Retryable: true}, effect.KindOverloaded},
		{&client.Error{Status: http.StatusServiceUnavailable, Kind: "infrastructure", Retryable: true}, effect.KindInfrastructure},
		{&client.Error{Status: http.StatusTooManyRequests, Kind: "quota", Retryable: true}, effect.KindQuota},
		{&client.Error{Status: http.StatusBadRequest, Kind: "invalidCall"}, effect.KindInvalidCall},
		{&client.Error{Status: http.StatusUnauthorized, Kind: "unauthorized"}, effect.KindInvalidCall},
	} {
		assert.Equal(t, c.want, effect.KindOf(c.e), c.e.Kind)
		assert.Equal(t, c.e.Retryable, effect.Retryable(c.e), c.e.Kind)
	}
	assert.Equal(t, server.KindOverloaded, effect.KindOverloaded.String(), "the wire word is the effect's")
}
