//go:build linux

package python_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/internal/wasm/cache/cachetest"
)

// TestMain keeps the backend's check of the machine out of the user's
// cache directory (cachetest.Main).
func TestMain(m *testing.M) { os.Exit(cachetest.Main(m)) }

var (
	availableOnce sync.Once
	availableErr  error
)

// needSandbox skips a test on a machine without what the sandbox needs
// (bubblewrap, python3, user namespaces), with the reason New gives.
func needSandbox(t *testing.T) {
	t.Helper()
	availableOnce.Do(func() {
		if availableErr = python.Available(nil); availableErr != nil {
			return
		}
		var b *python.Backend
		if b, availableErr = python.New(nil); availableErr == nil {
			availableErr = b.Warm(context.Background())
			_ = b.Close()
		}
	})
	if availableErr != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", availableErr)
	}
}
