package quickjs

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/wasm/cache/cachetest"
	"github.com/sandbank/sandbank/spi"
)

// TestMain compiles the module into the process-wide cache before any
// test runs, so that no test's cold-start allowance covers a compile
// (which takes over ten seconds under the race detector). The default
// cache directory is a temporary one (cachetest.Main), never the user's.
func TestMain(m *testing.M) {
	if os.Getenv(cacheChildEnv) != "" {
		os.Exit(m.Run()) // a child of TestDefaultCacheIsSealed: its cache is the parent's
	}
	os.Exit(cachetest.Main(warmedTests{m}))
}

// warmedTests runs the tests once the module is compiled.
type warmedTests struct{ m *testing.M }

func (w warmedTests) Run() int {
	b, err := New(&Options{ColdStartAllowance: 10 * time.Minute})
	if err == nil {
		err = b.Warm(context.Background())
		_ = b.Close()
	}
	if err != nil {
		panic(err)
	}
	return w.m.Run()
}

// shared is one backend for the tests that do not need their own: it
// compiles the module once.
var (
	sharedOnce sync.Once
	sharedB    *Backend
	sharedErr  error
)

func shared(t testing.TB) *Backend {
	t.Helper()
	sharedOnce.Do(func() {
		sharedB, sharedErr = New(nil)
		if sharedErr == nil {
			sharedErr = sharedB.Warm(context.Background())
		}
	})
	require.NoError(t, sharedErr)
	return sharedB
}

// newBackend returns a backend of its own, closed when the test ends.
func newBackend(t testing.TB, opts *Options) *Backend {
	t.Helper()
	b, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// withWrapper returns a backend of its own whose guest runs wrapper
// instead of the real one (to reach paths a real script cannot), and
// which shares the compiled module of nothing: it compiles its own.
func withWrapper(t testing.TB, wrapper string) *Backend {
	t.Helper()
	b := newBackend(t, nil)
	b.args = func(mem int64) []string {
		a := jsguest.Args(mem)
		a[len(a)-1] = wrapper
		return a
	}
	return b
}

// patchWrapper returns the real wrapper with old replaced by new, failing
// the test if old is not in it.
func patchWrapper(t testing.TB, old, new string) string {
	t.Helper()
	require.Contains(t, jsguest.Wrapper, old, "the wrapper changed: update the test")
	return strings.Replace(jsguest.Wrapper, old, new, 1)
}

func eval(t testing.TB, b *Backend, script, input string, limits spi.Limits) spi.Outcome {
	t.Helper()
	if input == "" {
		input = "null"
	}
	if limits.WallClock == 0 {
		limits.WallClock = 20 * time.Second
	}
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte(input), Limits: limits})
	require.NoError(t, err)
	return out
}

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
