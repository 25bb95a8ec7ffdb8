package starlark_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/internal/runfiles/filestest"
)

func TestFiles(t *testing.T) {
	b, err := starlark.New(nil)
	require.NoError(t, err)
	filestest.Run(t, b, filestest.Starlark)
}
