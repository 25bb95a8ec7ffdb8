package starlarknative_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlarknative"
	"github.com/sandbank/sandbank/internal/runfiles/filestest"
)

func TestFiles(t *testing.T) {
	b, err := starlarknative.New(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	filestest.Run(t, b, filestest.Starlark)
}
