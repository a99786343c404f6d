package engine

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"torchtpu/pjrt"
)

// cacheHostBlocks turns on the plugin's host block cache (pjrt.CacheHostAllocations)
// and holds the C library's heap thresholds (pjrt.HoldHostHeap) when the device
// memory is host memory, that is on the CPU plugin: without them every launch
// maps its temporaries fresh and faults in each of their pages, and in some
// processes so does every buffer of a few MiB. TORCHTPU_HOST_CACHE=0 turns both
// off; a byte count sets how much freed memory the cache keeps (default a
// quarter of physical memory).
func (e *Engine) cacheHostBlocks(p *pjrt.Plugin, platform string) {
	v := os.Getenv("TORCHTPU_HOST_CACHE")
	if platform != "cpu" || v == "0" {
		return
	}
	limit := physicalMemory() / 4
	if v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "torchtpu: warning: TORCHTPU_HOST_CACHE=%q is not a byte count; using %d\n", v, limit)
		} else {
			limit = n
		}
	}
	if err := p.CacheHostAllocations(limit); err != nil {
		fmt.Fprintf(os.Stderr, "torchtpu: warning: %v; host buffers are not cached\n", err)
		return
	}
	e.hostCache = true
	pjrt.HoldHostHeap()
}

// physicalMemory returns the machine's RAM in bytes (1 GiB if unknown).
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 1 << 30
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// EmptyCache returns the host block cache's free blocks to the system.
func (e *Engine) EmptyCache() {
	if e.hostCache {
		pjrt.ReleaseHostCache()
	}
}
