package host

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/sys"
)

// exitOf runs StopCheck and returns the exit code it ended the call
// with, or false when it granted a budget.
func exitOf(t *testing.T, ctx context.Context, stack []uint64) (code uint32, ended bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			err, ok := r.(error)
			require.True(t, ok, "the stop check ends a call with an error: %v", r)
			var exit *sys.ExitError
			require.True(t, errors.As(err, &exit))
			code, ended = exit.ExitCode(), true
		}
	}()
	StopCheck(ctx, stack)
	return 0, false
}

// TestStopCheck: a live call is granted StopGrant more units; a call whose
// context is done ends with the exit code close-on-context-done gives.
func TestStopCheck(t *testing.T) {
	stack := []uint64{0}
	_, ended := exitOf(t, context.Background(), stack)
	require.False(t, ended)
	assert.Equal(t, uint64(StopGrant), stack[0])

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, ended := exitOf(t, ctx, stack)
	require.True(t, ended, "a done context did not end the call")
	assert.Equal(t, sys.ExitCodeContextCanceled, code)

	ctx, cancel = context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	code, ended = exitOf(t, ctx, stack)
	require.True(t, ended, "a passed deadline did not end the call")
	assert.Equal(t, sys.ExitCodeDeadlineExceeded, code)
}

// countdown is a Budget of n visits of 10 units each.
type countdown struct {
	n    int
	left []int32
}

func (c *countdown) Visit(left int32) (int32, bool) {
	c.left = append(c.left, left)
	if c.n == 0 {
		return 0, false
	}
	c.n--
	return 10, true
}

// TestStopCheckBudget: a call whose context carries a Budget gets the
// budget's grants, and ends with ExitCodeBudget once it is spent.
func TestStopCheckBudget(t *testing.T) {
	b := &countdown{n: 1}
	ctx := WithBudget(context.Background(), b)
	stack := []uint64{3}
	_, ended := exitOf(t, ctx, stack)
	require.False(t, ended)
	assert.Equal(t, uint64(10), stack[0])
	stack[0] = 0
	code, ended := exitOf(t, ctx, stack)
	require.True(t, ended)
	assert.Equal(t, uint32(ExitCodeBudget), code)
	assert.Equal(t, []int32{3, 0}, b.left)
}
