package host

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/sys"
)

// TestStopCheck: a live call is granted StopGrant more units; a call whose
// context is done ends with the exit code close-on-context-done gives.
func TestStopCheck(t *testing.T) {
	stack := []uint64{0}
	stopCheck(context.Background(), stack)
	assert.Equal(t, uint64(StopGrant), stack[0])

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	defer func() {
		r := recover()
		err, ok := r.(error)
		require.True(t, ok, "a done context ends the call with an error: %v", r)
		var exit *sys.ExitError
		require.True(t, errors.As(err, &exit))
		assert.Equal(t, sys.ExitCodeDeadlineExceeded, exit.ExitCode())
	}()
	stopCheck(ctx, stack)
	t.Fatal("a done context did not end the call")
}
