package compile_cache

import (
	"container/list"
	"sync"
)

// Entry is a cached value that can release its resources.
type Entry interface{ Destroy() }

// LRU holds at most Cap entries, evicting the least recently used.
// It is safe for concurrent use.
type LRU struct {
	mu      sync.Mutex
	cap     int
	order   *list.List // front = most recent
	items   map[string]*list.Element
	hits    int64
	misses  int64
	evicted int64
}

type item struct {
	key string
	val Entry
}

// NewLRU returns an empty cache holding at most capacity entries.
func NewLRU(capacity int) *LRU {
	return &LRU{cap: capacity, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns the entry for key and counts a hit or a miss.
func (c *LRU) Get(key string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		c.hits++
		return el.Value.(*item).val, true
	}
	c.misses++
	return nil, false
}

// Peek reports whether key is cached, without counting or reordering.
func (c *LRU) Peek(key string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		return el.Value.(*item).val, true
	}
	return nil, false
}

// Put stores val under key, evicting (and destroying) the oldest entry when full.
func (c *LRU) Put(key string, val Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		old := el.Value.(*item)
		if old.val != val {
			old.val.Destroy()
		}
		old.val = val
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&item{key, val})
	c.evict()
}

// evict drops the least recently used entries beyond the capacity.
func (c *LRU) evict() {
	for c.order.Len() > c.cap {
		el := c.order.Back()
		c.order.Remove(el)
		it := el.Value.(*item)
		delete(c.items, it.key)
		it.val.Destroy()
		c.evicted++
	}
}

// SetCap changes the capacity to n (at least 1), evicting the least
// recently used entries beyond it.
func (c *LRU) SetCap(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cap = max(1, n)
	c.evict()
}

// Cap returns the capacity.
func (c *LRU) Cap() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cap
}

// Len returns the number of entries.
func (c *LRU) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Stats returns the hit, miss and eviction counts.
func (c *LRU) Stats() (hits, misses, evicted int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.evicted
}
