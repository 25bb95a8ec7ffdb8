//go:build cgo

package wasmtime

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/wasm/cache/cachetest"
	"github.com/sandbank/sandbank/spi"
)

// TestMain compiles the module once for the whole test binary, for both
// engines (with and without fuel), so that no test waits for a compile
// (which takes seconds, and far longer under the race detector).
func TestMain(m *testing.M) {
	os.Exit(cachetest.Main(warmedTests{m}))
}

// warmedTests runs the tests once the module is compiled for both engines
// (with and without fuel), with the default cache directory a temporary
// one (cachetest.Main).
type warmedTests struct{ m *testing.M }

func (w warmedTests) Run() int {
	for _, fuel := range []uint64{0, MaxFuel} {
		b, err := New(&Options{Fuel: fuel, ColdStartAllowance: 10 * time.Minute})
		if err == nil {
			err = b.Warm(context.Background())
			_ = b.Close()
		}
		if err != nil {
			panic(err)
		}
	}
	return w.m.Run()
}

var (
	sharedOnce sync.Once
	sharedB    *Backend
)

// shared is one backend for the tests that do not need their own.
func shared(t testing.TB) *Backend {
	t.Helper()
	sharedOnce.Do(func() {
		b, err := New(nil)
		require.NoError(t, err)
		sharedB = b
	})
	return sharedB
}

func newBackend(t testing.TB, o *Options) *Backend {
	t.Helper()
	b, err := New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func eval(t testing.TB, b *Backend, script, input string, l spi.Limits) (spi.Outcome, error) {
	t.Helper()
	if input == "" {
		input = "{}"
	}
	return b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte(input), Limits: l})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// started is a log sink that closes c at the first line the script logs:
// a test waits on it to know the script is running (never a sleep).
type started struct {
	once sync.Once
	c    chan struct{}
}

func newStarted() *started { return &started{c: make(chan struct{})} }

func (s *started) Log(spi.LogLevel, spi.LogStream, string) bool {
	s.once.Do(func() { close(s.c) })
	return true
}
