package starlarkwasm

import (
	"github.com/sandbank/sandbank/internal/wasm/park"
)

// Parked mode's pools (internal/wasm/park): the parked instances of one
// poolKey.

// maxPools bounds how many keys keep a pool of their own; a run with any
// other key boots an instance for itself, which ends after the run.
const maxPools = 4

// pool keeps the parked instances of one key.
type pool = park.Pool[*instance]

// newPools returns the backend's empty pools, each of size instances.
func (b *Backend) newPools(size int) *park.Pools[poolKey, *instance] {
	return park.NewPools(maxPools, func(k poolKey) *pool {
		return park.New(size, func(p *pool) (*instance, bool) {
			// a pool exists only once a run or Warm had the module
			inst := b.startInstance(p, k, nil, b.peng.mod)
			return inst, inst != nil
		})
	})
}

// isReady is the channel park.Pool.Warm waits on.
func isReady(inst *instance) <-chan struct{} { return inst.Ready }
