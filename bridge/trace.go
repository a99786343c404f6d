package main

/*
#include <stdint.h>
#define TTPU_TYPES_ONLY
#include "torchtpu.h"
*/
import "C"

import "sync"

// stopped holds the events of the trace stopped last until the caller's
// buffer was large enough to take them.
var (
	stoppedMu sync.Mutex
	stopped   []byte
)

//export ttpu_trace_start
func ttpu_trace_start(limit C.int64_t, err *C.char, errlen C.int64_t) C.ttpu_status {
	return guard(err, errlen, func() error { return eng.StartTrace(int(limit)) })
}

//export ttpu_trace_stop
func ttpu_trace_stop(buf *C.char, n C.int64_t) (needed C.int64_t) {
	defer func() {
		if recover() != nil {
			needed = 0
		}
	}()
	stoppedMu.Lock()
	defer stoppedMu.Unlock()
	if stopped == nil {
		stopped = eng.StopTrace()
	}
	needed = C.int64_t(len(stopped) + 1)
	if needed <= n {
		setErr(buf, n, string(stopped))
		stopped = nil
	}
	return needed
}
