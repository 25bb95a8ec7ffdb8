package conformance

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// spy wraps a backend and sees its Evaluate calls from the backend's side
// of the effect: when the first call is entered and when it returned
// (abort_mid_run cancels only once the backend was really called), and
// when each call returned, so that the kit times the backend's own stop and
// not the effect's, which returns at its deadline whatever the backend
// does. It keeps the inner backend's optional behaviour: Warm and Close are
// passed through when the inner backend implements them.
type spy struct {
	inner    spi.Backend
	once     sync.Once
	entered  chan struct{}
	returned chan struct{}

	mu      sync.Mutex
	done    int       // calls returned
	lastEnd time.Time // when the latest call returned
	changed chan struct{}
	// lastIn and lastOut are the latest call's input and value (before
	// the effect canonicalises the value, sorting its keys).
	lastIn, lastOut []byte
}

var (
	_ spi.Backend = (*spy)(nil)
	_ spi.Warmer  = (*spy)(nil)
	_ io.Closer   = (*spy)(nil)
)

func newSpy(inner spi.Backend) *spy {
	return &spy{inner: inner, entered: make(chan struct{}), returned: make(chan struct{}), changed: make(chan struct{})}
}

func (s *spy) Capabilities() spi.Capabilities { return s.inner.Capabilities() }

func (s *spy) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	first := false
	s.once.Do(func() {
		first = true
		close(s.entered)
	})
	var out spi.Outcome
	defer func() {
		s.mu.Lock()
		s.lastIn = append([]byte(nil), req.Input...)
		s.lastOut = append([]byte(nil), out.Value...)
		s.done++
		s.lastEnd = time.Now()
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		if first {
			close(s.returned)
		}
	}()
	out, err := s.inner.Evaluate(ctx, req)
	return out, err
}

// last returns the latest call's input and value as the backend saw and
// returned them.
func (s *spy) last() (in, out []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastIn, s.lastOut
}

// waitReturned waits until n calls have returned, or until timeout, and
// reports when the latest call returned.
func (s *spy) waitReturned(n int, timeout time.Duration) (time.Time, bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		done, end, ch := s.done, s.lastEnd, s.changed
		s.mu.Unlock()
		if done >= n {
			return end, true
		}
		select {
		case <-ch:
		case <-t.C:
			return time.Time{}, false
		}
	}
}

// Warm warms the inner backend when it is a spi.Warmer.
func (s *spy) Warm(ctx context.Context) error {
	if w, ok := s.inner.(spi.Warmer); ok {
		return w.Warm(ctx)
	}
	return nil
}

// Close closes the inner backend when it is an io.Closer.
func (s *spy) Close() error {
	if c, ok := s.inner.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
