package syscallnames

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestExisting: a name of the architecture is kept, in order, and one it
// does not have is left out.
func TestExisting(t *testing.T) {
	assert.Equal(t, []string{"read", "write"}, Existing([]string{"read", "no_such_call", "write"}))
	if runtime.GOARCH == "arm64" {
		assert.Empty(t, Existing([]string{"open"}), "arm64 has no legacy open")
	} else if runtime.GOARCH == "amd64" {
		assert.Equal(t, []string{"open"}, Existing([]string{"open"}))
	}
}
