package quickjs

import (
	"context"
	"sync"
)

// Parked mode's pools: the parked instances of one memory limit.

// pool keeps up to size parked instances for one memory limit.
type pool struct {
	b           *Backend
	memoryBytes int64
	size        int

	mu      sync.Mutex
	idle    []*instance
	booting int
	broken  bool          // a background boot failed: boot only on request
	changed chan struct{} // closed (and replaced) when idle or booting changes
}

// notify wakes the runs waiting for an instance; p.mu is held.
func (p *pool) notify() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// await returns a parked instance, waiting for one that is booting in
// the background (it is ready sooner than a new one, and costs the host
// no second boot); nil when none is idle or booting, or ctx is done.
func (p *pool) await(ctx context.Context) *instance {
	for {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			inst := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return inst
		}
		if p.booting == 0 {
			p.mu.Unlock()
			return nil
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// poolFor returns the pool of a memory limit, or nil when too many limits
// have a pool already.
func (b *Backend) poolFor(memoryBytes int64) *pool {
	b.poolsMu.Lock()
	defer b.poolsMu.Unlock()
	if p, ok := b.pools[memoryBytes]; ok {
		return p
	}
	if len(b.pools) >= maxPools {
		return nil
	}
	p := &pool{b: b, memoryBytes: memoryBytes, size: b.set.poolSize}
	b.pools[memoryBytes] = p
	return p
}

// take returns a parked instance, or nil when none is idle.
func (p *pool) take() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	inst := p.idle[n-1]
	p.idle = p.idle[:n-1]
	return inst
}

// put adds a parked instance to the idle ones, or reports false when the
// pool is full.
func (p *pool) put(inst *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inst.background {
		inst.background = false
		p.booting--
		p.notify()
	}
	if len(p.idle) >= p.size {
		return false
	}
	p.idle = append(p.idle, inst)
	p.notify()
	return true
}

// ended is called when an instance of the pool ended: it boots
// replacements until the pool is full again.
func (p *pool) ended(inst *instance, parked bool) {
	p.mu.Lock()
	if inst.background {
		inst.background = false
		p.booting--
		if !parked {
			p.broken = true
		}
		p.notify()
	}
	p.mu.Unlock()
	if !inst.replaced {
		p.refill()
	}
}

// refill boots instances in the background until idle and booting ones
// fill the pool, and returns them.
func (p *pool) refill() []*instance {
	compiled := p.b.mod
	var started []*instance
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.broken && len(p.idle)+p.booting < p.size {
		inst := p.b.startInstance(p, p.memoryBytes, nil, compiled)
		if inst == nil {
			break // closed
		}
		p.booting++
		started = append(started, inst)
	}
	return started
}

// settled reports whether the pool has no instance booting and holds
// every live instance of the backend idle (for tests).
func (b *Backend) settled() bool {
	b.poolsMu.Lock()
	defer b.poolsMu.Unlock()
	idle := 0
	for _, p := range b.pools {
		p.mu.Lock()
		idle += len(p.idle)
		booting := p.booting
		p.mu.Unlock()
		if booting > 0 {
			return false
		}
	}
	return int64(idle) == b.live.Load()
}

// warm fills the pool and waits until every instance it booted parked
// (or failed), or ctx is done.
func (p *pool) warm(ctx context.Context) error {
	for _, inst := range p.refill() {
		select {
		case <-inst.ready:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}
