package extism

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/fixtures/wasm"
	"github.com/sandbank/sandbank/spi"
)

// limits used by tests unless they need others.
var testLimits = spi.Limits{WallClock: 2 * time.Second, MemoryBytes: 32 << 20}

// fixture returns the script of a wasm fixture case.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := wasm.Set().Script(name)
	require.NoError(t, err)
	return b
}

// testdata returns the module built from testdata/<name>.wat.
func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	require.NoError(t, err)
	return b
}

// newTestBackend returns a backend closed at the end of the test.
func newTestBackend(t testing.TB, opts *Options) *Backend {
	t.Helper()
	b, err := newBackend(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// eval runs script with input under limits.
func eval(t testing.TB, b *Backend, script []byte, input string, limits spi.Limits) (spi.Outcome, error) {
	t.Helper()
	return b.Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage(input), Limits: limits})
}
