package quickjs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/internal/runfiles/filestest"
)

func TestFiles(t *testing.T) {
	for _, mode := range []quickjs.Mode{quickjs.ModeFresh, quickjs.ModeParked} {
		t.Run(mode.String(), func(t *testing.T) {
			b, err := quickjs.New(&quickjs.Options{Mode: mode})
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close() })
			filestest.Run(t, b, filestest.JavaScript)
		})
	}
}
