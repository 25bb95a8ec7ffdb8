//go:build linux

package starlarknative

import (
	"context"
	"fmt"
	"sync"

	"github.com/sandbank/sandbank/internal/cgroup"
)

// spare is a started, confined child waiting for its run, and, where
// runs get cgroups, the group it already sits in, bounded for a run of
// memoryBytes. It holds nothing of any run: it has read no byte yet, and
// learns its limits, its script and its input from the run that takes
// it.
type spare struct {
	c           *child
	g           *cgroup.Group // nil without cgroups
	memoryBytes int64
}

// place moves the child into a new group bounded for a run of
// memoryBytes, and removes the group it was in. The child is blocked
// reading its stdin: nothing the group should bound runs before it is in
// the group.
func (s *spare) place(m *cgroup.Manager, memoryBytes int64) error {
	g, err := m.New(cgroup.Limits{MemoryBytes: memoryBytes + groupOverhead, Tasks: groupTasks})
	if err != nil {
		return fmt.Errorf("%w: %v", errNoOutcome, err)
	}
	if err := g.Place(s.c.cmd.Process.Pid); err != nil {
		_ = g.Remove()
		return fmt.Errorf("%w: %v", errNoOutcome, err)
	}
	if s.g != nil {
		_ = s.g.Remove()
	}
	s.g, s.memoryBytes = g, memoryBytes
	return nil
}

// discard ends the child and removes its group.
func (s *spare) discard() {
	s.c.discard()
	if s.g != nil {
		_ = s.g.Remove()
	}
}

// spares keeps confined children started off the request path: the
// filler starts one for each spare a run took, once that run has ended,
// so that starting it competes with no run's own child.
type spares struct {
	life  context.Context
	start func() (*spare, error)
	ready chan *spare   // the spares
	need  chan struct{} // one token per spare to start
	done  sync.WaitGroup
}

// newSpares keeps n spares ready (first among them), starting them with
// start until life ends.
func newSpares(life context.Context, n int, start func() (*spare, error), first *spare) *spares {
	s := &spares{life: life, start: start, ready: make(chan *spare, n), need: make(chan struct{}, n)}
	s.ready <- first
	for range n - 1 {
		s.need <- struct{}{}
	}
	s.done.Add(1)
	go s.fill()
	return s
}

// fill starts a spare per token. A spare that cannot start drops its
// token: runs then start children of their own, and the first that
// succeeds asks for one again.
func (s *spares) fill() {
	defer s.done.Done()
	for {
		select {
		case <-s.need:
		case <-s.life.Done():
			return
		}
		sp, err := s.start()
		if err != nil {
			continue
		}
		select {
		case s.ready <- sp:
		case <-s.life.Done():
			sp.discard()
			return
		}
	}
}

// take returns a spare that is still waiting, or starts one for the
// caller when none is ready. The caller calls replenish once its run
// has ended.
func (s *spares) take() (*spare, error) {
	for {
		select {
		case sp := <-s.ready:
			if sp.c.ended() {
				sp.discard()
				s.replenish()
				continue
			}
			return sp, nil
		default:
		}
		return s.start()
	}
}

// replenish asks the filler for one more spare (never blocking: with the
// pool full of tokens, it has enough to do).
func (s *spares) replenish() {
	select {
	case s.need <- struct{}{}:
	default:
	}
}

// warm returns once a spare is ready, or ctx is done.
func (s *spares) warm(ctx context.Context) error {
	select {
	case sp := <-s.ready:
		select {
		case s.ready <- sp:
		default:
			sp.discard()
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
		case sp := <-s.ready:
			sp.discard()
		default:
			return nil
		}
	}
}
