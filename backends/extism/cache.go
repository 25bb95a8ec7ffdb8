package extism

import (
	"container/list"
	"context"
	"errors"
	"sync"

	xt "github.com/extism/go-sdk"

	"github.com/sandbank/sandbank/spi"
)

// errClosed is returned by Evaluate after Close.
var errClosed = errors.New("extism: backend closed")

// moduleKey names one compiled plugin: the script's content address and
// the memory cap its runtime was built with (wazero fixes the cap per
// runtime, so a different Limits.MemoryBytes needs its own compilation;
// the machine code itself is shared through the compilation cache).
type moduleKey struct {
	sum   [32]byte
	pages uint32
}

// compiled is what compiling a script produced: a plugin ready to be
// instantiated, or a fixed outcome (a compile error, or a memory cap too
// small for the module), which is cached too so garbage is refused cheaply.
type compiled struct {
	plugin  *xt.CompiledPlugin
	outcome *spi.Outcome
}

// compileFunc compiles script for key. A non-nil error is an
// infrastructure failure and is not cached.
type compileFunc func(key moduleKey, script []byte) (compiled, error)

// cacheEntry is one slot of the cache. ready is closed once val or err is
// set; refs counts the runs using it; an evicted entry is closed when its
// last run releases it.
type cacheEntry struct {
	key     moduleKey
	ready   chan struct{}
	val     compiled
	err     error
	refs    int
	evicted bool
	elem    *list.Element
}

// moduleCache is a bounded, least-recently-used cache of compiled plugins,
// safe for concurrent use. Concurrent first runs of one module compile it
// once.
type moduleCache struct {
	compile compileFunc
	max     int
	// onEmpty runs once, after Close, when the last entry has been closed.
	onEmpty func()

	mu      sync.Mutex
	lru     *list.List // of *cacheEntry, most recent first
	entries map[moduleKey]*cacheEntry
	live    int // entries whose plugin is not closed yet
	closed  bool
	emptied bool
}

func newModuleCache(maxEntries int, compile compileFunc, onEmpty func()) *moduleCache {
	return &moduleCache{
		compile: compile,
		max:     maxEntries,
		onEmpty: onEmpty,
		lru:     list.New(),
		entries: make(map[moduleKey]*cacheEntry),
	}
}

// acquire returns the compiled plugin for key, compiling script on a miss.
// The caller must release the entry when its run is over.
func (c *moduleCache) acquire(ctx context.Context, key moduleKey, script []byte) (*cacheEntry, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed
	}
	if e, ok := c.entries[key]; ok {
		e.refs++
		c.lru.MoveToFront(e.elem)
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			c.release(e)
			return nil, ctx.Err()
		}
		if e.err != nil {
			c.release(e)
			return nil, e.err
		}
		return e, nil
	}
	e := &cacheEntry{key: key, ready: make(chan struct{}), refs: 1}
	e.elem = c.lru.PushFront(e)
	c.entries[key] = e
	c.live++
	victims := c.evictLocked()
	c.mu.Unlock()
	closeAll(victims)
	c.closed1(len(victims))

	// Compile outside the lock, without the caller's context: other runs
	// may be waiting for this entry, and one caller's cancellation must not
	// poison it.
	val, err := c.compile(key, script)
	c.mu.Lock()
	e.val, e.err = val, err
	if err != nil {
		// Infrastructure failures are not cached.
		if c.entries[key] == e {
			delete(c.entries, key)
			c.lru.Remove(e.elem)
		}
		e.evicted = true
	}
	c.mu.Unlock()
	close(e.ready)
	if err != nil {
		c.release(e)
		return nil, err
	}
	return e, nil
}

// release ends one run's use of e.
func (c *moduleCache) release(e *cacheEntry) {
	c.mu.Lock()
	e.refs--
	var victims []*cacheEntry
	if e.evicted && e.refs == 0 {
		victims = append(victims, e)
	}
	c.mu.Unlock()
	closeAll(victims)
	c.closed1(len(victims))
}

// evictLocked drops least recently used entries beyond the bound and
// returns those no run is using, to be closed outside the lock.
func (c *moduleCache) evictLocked() []*cacheEntry {
	var victims []*cacheEntry
	for c.lru.Len() > c.max {
		e := c.lru.Remove(c.lru.Back()).(*cacheEntry)
		delete(c.entries, e.key)
		e.evicted = true
		if e.refs == 0 {
			victims = append(victims, e)
		}
	}
	return victims
}

// closeAll closes the compiled plugins of victims.
func closeAll(victims []*cacheEntry) {
	for _, e := range victims {
		if e.val.plugin != nil {
			_ = e.val.plugin.Close(context.Background())
		}
	}
}

// closed1 accounts for n closed entries and runs onEmpty once the cache is
// closed and empty.
func (c *moduleCache) closed1(n int) {
	c.mu.Lock()
	c.live -= n
	run := c.closed && c.live == 0 && !c.emptied
	if run {
		c.emptied = true
	}
	c.mu.Unlock()
	if run && c.onEmpty != nil {
		c.onEmpty()
	}
}

// len returns the number of cached entries.
func (c *moduleCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// close evicts every entry; entries in use are closed when released.
func (c *moduleCache) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.max = 0
	victims := c.evictLocked()
	c.mu.Unlock()
	closeAll(victims)
	c.closed1(len(victims))
}
