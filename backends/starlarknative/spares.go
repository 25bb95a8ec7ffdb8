//go:build linux

package starlarknative

import (
	"context"
	"sync"
)

// spares keeps confined children started off the request path. A spare
// holds nothing of any run: it has read no byte yet, and learns its
// limits, its script and its input from the run that takes it.
type spares struct {
	life  context.Context
	start func() (*child, error)
	ready chan *child   // the spares; the filler holds one more
	kick  chan struct{} // wakes a filler that stopped on an error
	done  sync.WaitGroup
}

// newSpares keeps n children ready (first among them), starting them
// with start until life ends.
func newSpares(life context.Context, n int, start func() (*child, error), first *child) *spares {
	s := &spares{life: life, start: start, ready: make(chan *child, n), kick: make(chan struct{}, 1)}
	s.ready <- first
	s.done.Add(1)
	go s.fill()
	return s
}

// fill starts children while there is room for them. After an error
// (a child that cannot start or confine itself) it waits for a run to
// start one of its own before it tries again.
func (s *spares) fill() {
	defer s.done.Done()
	for {
		c, err := s.start()
		if err != nil {
			select {
			case <-s.kick:
				continue
			case <-s.life.Done():
				return
			}
		}
		select {
		case s.ready <- c:
		case <-s.life.Done():
			c.discard()
			return
		}
	}
}

// take returns a spare that is still waiting, or starts a child for the
// caller when none is ready.
func (s *spares) take() (*child, error) {
	for {
		select {
		case c := <-s.ready:
			if c.ended() {
				c.discard()
				continue
			}
			return c, nil
		default:
		}
		c, err := s.start()
		if err == nil {
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
		return c, err
	}
}

// warm returns once a spare is ready, or ctx is done.
func (s *spares) warm(ctx context.Context) error {
	select {
	case c := <-s.ready:
		select {
		case s.ready <- c:
		default:
			c.discard()
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close ends the filler and the spares; the backend's life has ended.
func (s *spares) close() error {
	s.done.Wait()
	for {
		select {
		case c := <-s.ready:
			c.discard()
		default:
			return nil
		}
	}
}
