package pjrt

/*
#include "capi.h"
*/
import "C"

import "fmt"

// CacheHostAllocations makes the plugin's large host allocations (at least
// 32 MiB, through posix_memalign or aligned_alloc) come from a cache of
// mmap'd blocks that keeps up to limit bytes of freed blocks for reuse,
// instead of from the C library, which maps big blocks fresh and unmaps them
// on free. It is meant for CPU plugins, whose device buffers and per-launch
// temporaries are host memory. It rebinds only the plugin's own imports and
// may be called once per plugin.
func (p *Plugin) CacheHostAllocations(limit int64) error {
	if limit < 0 {
		limit = 0
	}
	n := C.tt_hostcache_install(p.handle, C.size_t(limit))
	if n < 0 {
		return fmt.Errorf("pjrt: cannot rebind the host allocations of plugin %q", p.path)
	}
	if n == 0 {
		return fmt.Errorf("pjrt: plugin %q imports none of posix_memalign, aligned_alloc, realloc, free", p.path)
	}
	return nil
}

// HostCacheStats is the state of the host block cache.
type HostCacheStats struct {
	FreeBytes, LiveBytes int64 // kept for reuse; handed out to the plugin
	Hits, Misses         int64 // allocations served from the cache; newly mapped
}

// ReadHostCacheStats returns the host block cache's figures.
func ReadHostCacheStats() HostCacheStats {
	var f, l, h, m C.uint64_t
	C.tt_hostcache_stats(&f, &l, &h, &m)
	return HostCacheStats{int64(f), int64(l), int64(h), int64(m)}
}

// ReleaseHostCache unmaps every free block of the host cache.
func ReleaseHostCache() { C.tt_hostcache_release() }

// HoldHostHeap fixes the C library's heap thresholds for the whole process
// (blocks under 32 MiB from the heaps, heaps trimmed past 64 MiB), so that
// host blocks of a few MiB are reused instead of being mapped and faulted in
// again on each use. It reports false, and changes nothing, when the user has
// set the C library's malloc tunables.
func HoldHostHeap() bool { return C.tt_hostheap_hold() != 0 }
