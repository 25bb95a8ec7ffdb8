package typescript

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// key is a script's SHA-256: the content address the effect already
// verified, computed again here because a backend sees bytes, not
// addresses.
type key [sha256.Size]byte

func keyOf(script []byte) key { return sha256.Sum256(script) }

// cache holds transformed scripts, least recently used first out, bounded
// in entries and in bytes of JavaScript. It is safe for concurrent use.
type cache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	order      *list.List // of *entry, most recently used at the front
	byKey      map[key]*list.Element
}

type entry struct {
	key key
	js  []byte
}

func newCache(maxEntries int, maxBytes int64) *cache {
	return &cache{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), byKey: make(map[key]*list.Element)}
}

// get returns a copy of the JavaScript cached under k: the inner backend
// may keep or change the bytes it is handed.
func (c *cache) get(k key) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return append([]byte(nil), el.Value.(*entry).js...), true
}

// put caches a copy of js under k, evicting the least recently used
// entries until both bounds hold. A script larger than the byte bound is
// not cached.
func (c *cache) put(k key, js []byte) {
	size := int64(len(js))
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = c.order.PushFront(&entry{key: k, js: append([]byte(nil), js...)})
	c.bytes += size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		oldest := c.order.Back()
		e := oldest.Value.(*entry)
		c.order.Remove(oldest)
		delete(c.byKey, e.key)
		c.bytes -= int64(len(e.js))
	}
}

// len reports the number of cached scripts and their bytes.
func (c *cache) len() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.bytes
}
