package park

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Instance is a parked instance as its pool sees it: comparable (a
// pointer) and carrying its seat.
type Instance interface {
	comparable
	Seat() *Seat
}

// Seat is an instance's place in its pool, guarded by the pool's lock
// (an instance is booting in the background, out on a run, idle, or none
// of these once it left), and whether its guest called a function parked
// mode does not expect (WASI).
type Seat struct {
	background bool // booted by Refill, not yet parked
	out        bool // taken by a run, or booted for one; it may come back
	unexpected atomic.Bool
}

// MarkUnexpected records that the guest called a function outside the
// set parked mode expects: the instance must end after its run.
func (s *Seat) MarkUnexpected() { s.unexpected.Store(true) }

// Unexpected reports whether the guest called such a function since the
// last ClearUnexpected.
func (s *Seat) Unexpected() bool { return s.unexpected.Load() }

// ClearUnexpected starts a run with no such call.
func (s *Seat) ClearUnexpected() { s.unexpected.Store(false) }

// Pool keeps up to size parked instances of one key.
type Pool[I Instance] struct {
	size int
	boot func(*Pool[I]) (I, bool)

	mu      sync.Mutex
	idle    []I
	booting int
	out     int
	broken  bool          // a background boot failed: boot only for a run
	changed chan struct{} // closed (and replaced) when idle or booting changes
}

// New returns an empty pool of size instances. boot starts an instance
// of the pool in the background and reports false once the backend is
// closed; the pool calls it with its lock held, so boot must not call
// the pool.
func New[I Instance](size int, boot func(*Pool[I]) (I, bool)) *Pool[I] {
	return &Pool[I]{size: size, boot: boot}
}

// notify wakes the runs waiting for an instance; p.mu is held.
func (p *Pool[I]) notify() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// Await returns a parked instance for a run, waiting for one that is
// booting in the background (it is ready sooner than a new one, and
// costs the host no second boot); false when none is idle or booting, or
// ctx is done.
func (p *Pool[I]) Await(ctx context.Context) (I, bool) {
	for {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			inst := p.idle[n-1]
			p.idle = p.idle[:n-1]
			inst.Seat().out = true
			p.out++
			p.mu.Unlock()
			return inst, true
		}
		if p.booting == 0 {
			p.mu.Unlock()
			var none I
			return none, false
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			var none I
			return none, false
		}
	}
}

// Take returns an idle instance for a run, without waiting; false when
// none is idle.
func (p *Pool[I]) Take() (I, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return p.Await(ctx)
}

// Adopt counts an instance booted for a run as the pool's: it may come
// back with Put. The backend calls it before the instance's goroutine
// starts, so that the instance cannot Put or End before it.
func (p *Pool[I]) Adopt(inst I) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst.Seat().out = true
	p.out++
}

// leave takes inst out of the counts of what is booting and out; p.mu
// is held. It reports whether inst was a background boot.
func (p *Pool[I]) leave(inst I) (background bool) {
	s := inst.Seat()
	if s.background {
		s.background = false
		p.booting--
		p.notify()
		background = true
	}
	if s.out {
		s.out = false
		p.out--
	}
	return background
}

// Put adds a parked instance to the idle ones, or reports false when
// the pool has no room for it (the instance then ends).
func (p *Pool[I]) Put(inst I) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leave(inst)
	if len(p.idle)+p.booting >= p.size {
		return false
	}
	p.idle = append(p.idle, inst)
	p.notify()
	return true
}

// Leaving says an instance that was out on a run will not come back,
// and boots its replacement, before the run's caller learns its result.
func (p *Pool[I]) Leaving(inst I) {
	p.mu.Lock()
	if s := inst.Seat(); s.out {
		s.out = false
		p.out--
	}
	p.mu.Unlock()
	p.Refill()
}

// Ended is called when an instance of the pool ended (parked tells
// whether it ever parked): it leaves the pool, and replacements boot
// until the pool is full again. A background boot that never parked
// marks the pool broken: it boots only for runs from then on.
func (p *Pool[I]) Ended(inst I, parked bool) {
	p.mu.Lock()
	if p.leave(inst) && !parked {
		p.broken = true
	}
	p.idle = slices.DeleteFunc(p.idle, func(i I) bool { return i == inst })
	p.notify()
	p.mu.Unlock()
	p.Refill()
}

// Refill boots instances in the background until idle ones, booting ones
// and those out on runs fill the pool, and returns them.
func (p *Pool[I]) Refill() []I {
	var started []I
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.broken && len(p.idle)+p.booting+p.out < p.size {
		inst, ok := p.boot(p)
		if !ok {
			break // closed
		}
		inst.Seat().background = true
		p.booting++
		started = append(started, inst)
	}
	return started
}

// Warm fills the pool and waits until every instance it booted parked or
// ended (ready is closed then), or ctx is done.
func (p *Pool[I]) Warm(ctx context.Context, ready func(I) <-chan struct{}) error {
	for _, inst := range p.Refill() {
		select {
		case <-ready(inst):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// Counts reports how many instances are idle, booting in the background
// and out on runs.
func (p *Pool[I]) Counts() (idle, booting, out int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle), p.booting, p.out
}
