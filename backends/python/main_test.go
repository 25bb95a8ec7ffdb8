//go:build linux

package python_test

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/internal/wasm/cache/cachetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestExamples runs the package's examples where the sandbox can run and
// checks what they print (they have no Output comment: go test cannot
// skip an example on a machine without bubblewrap or python3).
func TestExamples(t *testing.T) {
	needSandbox(t)
	for _, c := range []struct {
		name    string
		example func()
		want    string
	}{
		{"Example", Example, `{"taxed":150.0,"total":120} <nil>` + "\n"},
		{"Example_failures", Example_failures, "scriptError ZeroDivisionError line 2: division by zero\nlimitExceeded wallClock\n"},
		{"ExampleBackend_Warm", ExampleBackend_Warm, "ready: true\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, printed(t, c.example))
		})
	}
}

// printed is what f prints on stdout.
func printed(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	text := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		text <- string(b)
	}()
	defer func() { os.Stdout = stdout }()
	f()
	require.NoError(t, w.Close())
	return <-text
}
