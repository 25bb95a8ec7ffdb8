package guest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCappedKeepsThePrefix(t *testing.T) {
	c := NewCapped(5)
	n, err := c.Write([]byte("abc"))
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	n, err = c.Write([]byte("defgh"))
	require.NoError(t, err)
	assert.Equal(t, 5, n, "a write past the limit still reports all of it written")
	assert.Equal(t, "abcde", c.Head(100))
	assert.Equal(t, "ab", c.Head(2))
	assert.Equal(t, []byte("abcde"), c.Bytes())
}
