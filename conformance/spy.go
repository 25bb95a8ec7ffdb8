package conformance

import (
	"context"
	"io"
	"sync"

	"github.com/sandbank/sandbank/spi"
)

// spy wraps a backend and signals when its first Evaluate is entered and
// when that call returned. abort_mid_run uses it to cancel only once the
// backend was really called, and to see the backend's own call return.
// It keeps the inner backend's optional behaviour: Warm and Close are
// passed through when the inner backend implements them.
type spy struct {
	inner    spi.Backend
	once     sync.Once
	entered  chan struct{}
	returned chan struct{}
}

var (
	_ spi.Backend = (*spy)(nil)
	_ spi.Warmer  = (*spy)(nil)
	_ io.Closer   = (*spy)(nil)
)

func newSpy(inner spi.Backend) *spy {
	return &spy{inner: inner, entered: make(chan struct{}), returned: make(chan struct{})}
}

func (s *spy) Capabilities() spi.Capabilities { return s.inner.Capabilities() }

func (s *spy) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	first := false
	s.once.Do(func() {
		first = true
		close(s.entered)
	})
	if first {
		defer close(s.returned)
	}
	return s.inner.Evaluate(ctx, req)
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
