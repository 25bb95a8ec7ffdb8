package quickjs

import (
	"github.com/sandbank/sandbank/internal/wasm/park"
)

// Parked mode's pools (internal/wasm/park): the parked instances of one
// memory limit.

// maxPools bounds how many memory limits keep a pool of their own; a
// run with any other limit boots a one-shot instance.
const maxPools = 4

// pool keeps the parked instances of one memory limit.
type pool = park.Pool[*instance]

// newPools returns the backend's empty pools, each of size instances.
func (b *Backend) newPools(size int) *park.Pools[int64, *instance] {
	return park.NewPools(maxPools, func(memoryBytes int64) *pool {
		return park.New(size, func(p *pool) (*instance, bool) {
			// a pool exists only once a run or Warm had the module
			inst := b.startInstance(p, memoryBytes, nil, b.mod)
			return inst, inst != nil
		})
	})
}

// isReady is the channel park.Pool.Warm waits on.
func isReady(inst *instance) <-chan struct{} { return inst.Ready }

// settled reports whether the pools have no instance booting or out on a
// run and hold every live instance of the backend idle (for tests).
func (b *Backend) settled() bool {
	idle, busy := 0, 0
	b.pools.Each(func(_ int64, p *pool) {
		i, booting, out := p.Counts()
		idle += i
		busy += booting + out
	})
	return busy == 0 && int64(idle) == b.live.Load()
}
