//go:build linux

package python_test

import (
	"sync"
	"testing"

	"github.com/sandbank/sandbank/backends/python"
)

var (
	availableOnce sync.Once
	availableErr  error
)

// needSandbox skips a test on a machine without what the sandbox needs
// (bubblewrap, python3, user namespaces), with the reason New gives.
func needSandbox(t *testing.T) {
	t.Helper()
	availableOnce.Do(func() {
		if availableErr = python.Available(nil); availableErr == nil {
			_, availableErr = python.New(nil)
		}
	})
	if availableErr != nil {
		t.Skipf("this machine cannot run the Python sandbox: %v", availableErr)
	}
}
