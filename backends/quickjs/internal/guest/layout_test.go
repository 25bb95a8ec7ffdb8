package guest

import (
	"testing"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLayoutOfTheShippedBinary(t *testing.T) {
	l, err := ParseLayout(quickjswasi.QuickJSWASM)
	require.NoError(t, err)
	t.Logf("stack [%d, %d): %d bytes", l.Bottom, l.Top, l.StackBytes())
	assert.Equal(t, uint32(0), l.Bottom%16)
	assert.Greater(t, l.Top, l.Bottom)
}
