package starlarkwasm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/internal/runfiles/filestest"
)

func TestFiles(t *testing.T) {
	for _, mode := range []starlarkwasm.Mode{starlarkwasm.ModeParked, starlarkwasm.ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			b, err := starlarkwasm.New(&starlarkwasm.Options{Mode: mode})
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close() })
			filestest.Run(t, b, filestest.Starlark)
		})
	}
}
