package park

import "sync"

// Pools keeps a Pool per key, for at most max keys; a run with any other
// key boots an instance of its own, which ends after the run.
type Pools[K comparable, I Instance] struct {
	max     int
	newPool func(K) *Pool[I]

	mu    sync.Mutex
	pools map[K]*Pool[I]
}

// NewPools returns an empty set of at most max pools, each made by
// newPool on its key's first use.
func NewPools[K comparable, I Instance](max int, newPool func(K) *Pool[I]) *Pools[K, I] {
	return &Pools[K, I]{max: max, newPool: newPool, pools: map[K]*Pool[I]{}}
}

// For returns the pool of key k, or nil when max keys have a pool.
func (s *Pools[K, I]) For(k K) *Pool[I] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pools[k]; ok {
		return p
	}
	if len(s.pools) >= s.max {
		return nil
	}
	p := s.newPool(k)
	s.pools[k] = p
	return p
}

// Each calls f with every pool made so far.
func (s *Pools[K, I]) Each(f func(K, *Pool[I])) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.pools {
		f(k, p)
	}
}
