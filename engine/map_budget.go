package engine

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"torchtpu/compile_cache"
	"torchtpu/pjrt"
)

// A process may hold only vm.max_map_count memory mappings (65530 by
// default), and the XLA CPU plugin's compiled code takes several per
// executable, a dozen or more for a large one. A long process that compiles
// thousands of programs (a test suite, a sweep over models) would reach the
// limit, and the plugin then fails in its JIT and brings the process down.
// mapBudget counts the process's mappings as programs are made: above half
// the limit it drops the least recently used quarter of the in-memory tier
// (those programs load again from the persistent tiers, or compile again,
// when next needed) and collects the executables nothing holds; above nine
// tenths, with nothing left to drop, a compile fails with an error that says
// why, before the plugin is asked.

// mapBudget watches the process's memory mappings for the in-memory tier.
type mapBudget struct {
	limit int // the mappings allowed: TORCHTPU_MAP_LIMIT, else vm.max_map_count; 0: not watched

	mu      sync.Mutex
	since   int // programs made since the last count
	last    int // the last count
	full    int // the in-memory tier's capacity before any shrink
	shrinks int64
	warned  bool
}

// newMapBudget reads the limit; full is the in-memory tier's capacity.
func newMapBudget(full int) *mapBudget {
	b := &mapBudget{full: full, since: 1 << 30} // counted at the first program
	if s := os.Getenv("TORCHTPU_MAP_LIMIT"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			b.limit = n
			return b
		}
		fmt.Fprintf(os.Stderr, "torchtpu: warning: TORCHTPU_MAP_LIMIT=%q is not a count of memory mappings; using vm.max_map_count\n", s)
	}
	if data, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && n > 0 {
			b.limit = n
		}
	}
	return b
}

// MapLimitError reports a compile refused because the process's memory
// mappings are near their limit.
type MapLimitError struct {
	Maps, Limit int
	Cached      int   // programs in the in-memory tier
	Live        int64 // executables alive, cached or held by compiled graphs
}

func (err *MapLimitError) Error() string {
	return fmt.Sprintf("torchtpu: cannot make another program: the process holds %d memory mappings of the %d it may have "+
		"(vm.max_map_count, or TORCHTPU_MAP_LIMIT), and compiled code takes several per program; "+
		"%d programs are alive, %d of them in the in-memory cache. Free compiled graphs (torch._dynamo.reset()) "+
		"or raise the limit (sysctl -w vm.max_map_count=1048576)", err.Maps, err.Limit, err.Live, err.Cached)
}

// admit is called before a program is compiled or loaded, on any thread. It
// counts the mappings every so often (every program once above half the
// limit), shrinks cache and collects above half the limit, and refuses
// above nine tenths.
func (b *mapBudget) admit(cache *compile_cache.LRU) error {
	if b == nil || b.limit <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.since++
	every := 64
	switch {
	case b.last > b.limit/2:
		every = 1
	case b.last > b.limit/4:
		every = 8
	}
	if b.since < every {
		return nil
	}
	b.since = 0
	n := pjrt.MemoryMappings()
	if n < 0 {
		b.limit = 0 // no /proc: nothing to watch with
		return nil
	}
	b.last = n
	hard := b.limit / 10 * 9
	switch {
	case n > b.limit/2:
		if !b.warned {
			b.warned = true
			fmt.Fprintf(os.Stderr, "torchtpu: warning: the process holds %d of its %d memory mappings; "+
				"the in-memory program cache now drops the programs it holds least recently used (each loads again from the persistent cache, or compiles again, when next needed)\n", n, b.limit)
		}
		n = b.shrink(cache, cache.Len()*3/4)
		for n > hard && cache.Len() > minPrograms { // near the limit: halve until under it or nothing is left to drop
			n = b.shrink(cache, cache.Len()/2)
		}
	case n < b.limit/4 && cache.Cap() < b.full:
		cache.SetCap(min(b.full, cache.Cap()*5/4+1))
	}
	if n > hard {
		return &MapLimitError{Maps: n, Limit: b.limit, Cached: cache.Len(), Live: pjrt.LiveExecutables()}
	}
	return nil
}

// minPrograms is the fewest programs the in-memory tier is shrunk to.
const minPrograms = 16

// shrink lowers cache's capacity to n programs (at least minPrograms),
// collects the executables it dropped and returns the mappings left.
func (b *mapBudget) shrink(cache *compile_cache.LRU, n int) int {
	cache.SetCap(max(minPrograms, n))
	b.shrinks++
	collectExecutables()
	b.last = pjrt.MemoryMappings()
	return b.last
}

// watched returns the mappings last counted and the limit the budget keeps
// to (0 when it watches none). Counting reads /proc/self/maps, which takes
// milliseconds in a process with many programs, so metrics do not count.
func (b *mapBudget) watched() (last, limit int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int64(b.last), int64(b.limit)
}

// collectExecutables runs a garbage collection and waits briefly for the
// cleanups it queued to destroy the executables nothing holds.
func collectExecutables() {
	runtime.GC()
	prev := pjrt.LiveExecutables()
	for range 40 {
		time.Sleep(5 * time.Millisecond)
		now := pjrt.LiveExecutables()
		if now == prev {
			return
		}
		prev = now
	}
}
