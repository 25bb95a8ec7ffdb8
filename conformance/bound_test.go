package conformance

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// hangingCloser's Close returns when release is closed.
type hangingCloser struct{ release chan struct{} }

func (c hangingCloser) Close() error {
	<-c.release
	return nil
}

// TestBounded runs bounded in a synctest bubble, whose clock moves only
// when every goroutine in it waits: the durations are exact, and a wait of
// minutes takes no time.
func TestBounded(t *testing.T) {
	t.Run("returns in time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			took, err, returned := bounded(time.Minute, "Warm", func() error {
				time.Sleep(20 * time.Second)
				return errors.New("no pool")
			})
			assert.True(t, returned)
			assert.EqualError(t, err, "no pool")
			assert.Equal(t, 20*time.Second, took)
		})
	})
	t.Run("left behind after d", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			took, err, returned := bounded(time.Minute, "Warm", func() error {
				<-release
				return errors.New("too late")
			})
			assert.False(t, returned)
			assert.NoError(t, err)
			assert.Equal(t, time.Minute, took)
			close(release) // the bubble ends when its goroutines have
		})
	})
	t.Run("a panic is an error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, err, returned := bounded(time.Minute, "Close", func() error { panic("boom") })
			assert.True(t, returned)
			assert.EqualError(t, err, "Close panicked: boom")
		})
	})
}

// TestCloseWithin: a Close that returns in time is no failure; one that
// does not is left running, and the reason names the bound.
func TestCloseWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		assert.Equal(t, "Close did not return within 10s (Options.CloseTimeout)",
			closeWithin(hangingCloser{release: release}, 10*time.Second))
		close(release)
		assert.Empty(t, closeWithin(hangingCloser{release: release}, 10*time.Second))
	})
}
