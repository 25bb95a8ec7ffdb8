//go:build linux

package python

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandlesCloseWhatIsLeft: a spawn's one cleanup path closes every
// descriptor it opened but those it handed over, once. Seen failing with
// close leaving the held descriptors open.
func TestHandlesCloseWhatIsLeft(t *testing.T) {
	var h handles
	r1, w1, err := h.pipe()
	require.NoError(t, err)
	r2, w2, err := h.pipe()
	require.NoError(t, err)
	h.keep(r2)
	h.drop(w1)
	h.close()
	h.close() // idempotent
	for _, f := range []*os.File{r1, w1, w2} {
		_, err := f.Stat()
		assert.ErrorIs(t, err, os.ErrClosed, f.Name())
	}
	_, err = r2.Stat()
	assert.NoError(t, err, "the kept end stays open")
	require.NoError(t, r2.Close())
}
