//go:build cgo

package wasmtime_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/internal/runfiles/filestest"
)

func TestFiles(t *testing.T) {
	b, err := wasmtime.New(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	filestest.Run(t, b, filestest.JavaScript)
}
