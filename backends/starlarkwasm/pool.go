package starlarkwasm

import (
	"context"
	"slices"
	"sync"
)

// Parked mode's pools: the parked instances of one poolKey.

// maxPools bounds how many keys keep a pool of their own; a run with any
// other key boots an instance for itself, which ends after the run.
const maxPools = 4

// pool keeps up to size parked instances for one key.
type pool struct {
	b    *Backend
	key  poolKey
	size int

	mu      sync.Mutex
	idle    []*instance
	booting int
	broken  bool          // a background boot failed: boot only for a run
	changed chan struct{} // closed (and replaced) when idle or booting changes
}

// poolFor returns the pool of key k, or nil when maxPools keys have one.
func (b *Backend) poolFor(k poolKey) *pool {
	b.poolsMu.Lock()
	defer b.poolsMu.Unlock()
	if p, ok := b.pools[k]; ok {
		return p
	}
	if len(b.pools) >= maxPools {
		return nil
	}
	p := &pool{b: b, key: k, size: b.poolSize}
	b.pools[k] = p
	return p
}

// notify wakes the runs waiting for an instance; p.mu is held.
func (p *pool) notify() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// await returns a parked instance, waiting for one that is booting in
// the background; nil when none is idle or booting, or ctx is done.
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

// ended is called when an instance of the pool ended: it leaves the idle
// ones, and replacements boot until the pool is full again.
func (p *pool) ended(inst *instance, parked bool) {
	p.mu.Lock()
	if inst.background {
		inst.background = false
		p.booting--
		if !parked {
			p.broken = true
		}
	}
	p.idle = slices.DeleteFunc(p.idle, func(i *instance) bool { return i == inst })
	p.notify()
	p.mu.Unlock()
	p.refill()
}

// refill boots instances in the background until idle and booting ones
// fill the pool, and returns them.
func (p *pool) refill() []*instance {
	compiled := p.b.peng.mod // compiled: a pool exists only once a run or Warm had the module
	var started []*instance
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.broken && len(p.idle)+p.booting < p.size {
		inst := p.b.startInstance(p, p.key, nil, compiled)
		if inst == nil {
			break // closed
		}
		p.booting++
		started = append(started, inst)
	}
	return started
}

// warm fills the pool and waits until every instance it booted parked
// (or ended), or ctx is done.
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
