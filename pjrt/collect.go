package pjrt

/*
#include "capi.h"
*/
import "C"

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"sync/atomic"
)

// An executable's compiled code lives in the plugin: on the XLA CPU plugin
// each one holds several memory mappings of JIT code (a dozen or more for a
// large one), and a process may have only vm.max_map_count of them. A cache that drops an executable
// may not know whether a compiled graph or a launch being prepared still
// holds it, so dropping is not destroying: an executable no Go value
// reaches any more is destroyed by the runtime's cleanup, and one that is
// destroyed explicitly is not destroyed again.

// live counts the executables created and not yet destroyed.
var live atomic.Int64

// execHandles are the plugin's handles of one executable, without the
// Executable itself, so that a cleanup can hold them.
type execHandles struct {
	c  *Client
	le *C.PJRT_LoadedExecutable
	e  *C.PJRT_Executable
}

// collectWhenUnreachable registers x's handles to be released once x is
// unreachable.
func (x *Executable) collectWhenUnreachable() {
	x.collect = runtime.AddCleanup(x, releaseExecutable, execHandles{c: x.c, le: x.le, e: x.e})
}

// releaseExecutable destroys an executable's handles. An executable of a
// closed client is left to the process's end: the plugin destroyed what it
// owned with the client.
func releaseExecutable(h execHandles) {
	live.Add(-1)
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	api := c.p.api
	if h.e != nil {
		_ = c.p.check("destroy executable", C.tt_executable_destroy(api, h.e))
	}
	if h.le != nil {
		_ = c.p.check("destroy loaded executable", C.tt_loaded_destroy(api, h.le))
	}
}

// LiveExecutables returns how many executables exist: created, and neither
// destroyed nor yet collected.
func LiveExecutables() int64 { return live.Load() }

// MemoryMappings returns the number of the process's memory mappings, or
// -1 where /proc cannot tell.
func MemoryMappings() int {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return -1
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	n := 0
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n
		}
		if err != nil {
			return -1
		}
	}
}
