package quickjs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

func TestParkedInstancesAreReused(t *testing.T) {
	b := newBackend(t, &Options{Mode: ModeParked, PoolSize: 2})
	require.NoError(t, b.Warm(t.Context()))
	require.Equal(t, int64(2), b.boots.Load())
	for i := range 50 {
		out := eval(t, b, `globalThis.n = (globalThis.n || 0) + 1; [n, input]`, `{"i":1}`, spi.Limits{})
		require.Equal(t, spi.KindOK, out.Kind, "run %d: %s", i, out.Message)
		assert.JSONEq(t, `[1,{"i":1}]`, string(out.Value))
	}
	t.Logf("boots %d reuses %d", b.boots.Load(), b.reuses.Load())
	assert.Equal(t, int64(50), b.reuses.Load())
	assert.Equal(t, int64(2), b.boots.Load())
}
