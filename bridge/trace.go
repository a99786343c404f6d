package main

/*
#include <stdint.h>
#define TTPU_TYPES_ONLY
#include "torchtpu.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"torchtpu/engine"
)

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

// stoppedEvents holds the events of the trace stopped last for
// ttpu_trace_stop_events until the caller's array was large enough.
var stoppedEvents []engine.TraceEvent

var traceKinds = map[string]C.int32_t{
	"compile": C.TTPU_TRACE_COMPILE, "load": C.TTPU_TRACE_LOAD, "execute": C.TTPU_TRACE_EXECUTE,
	"flush": C.TTPU_TRACE_FLUSH, "h2d": C.TTPU_TRACE_H2D, "d2h": C.TTPU_TRACE_D2H, "fallback": C.TTPU_TRACE_FALLBACK,
}

//export ttpu_trace_stop_events
func ttpu_trace_stop_events(out *C.ttpu_trace_event, max C.int64_t) (needed C.int64_t) {
	defer func() {
		if recover() != nil {
			needed = 0
		}
	}()
	stoppedMu.Lock()
	defer stoppedMu.Unlock()
	if stoppedEvents == nil {
		stoppedEvents, _ = eng.StopTraceEvents()
		if stoppedEvents == nil {
			stoppedEvents = []engine.TraceEvent{}
		}
	}
	needed = C.int64_t(len(stoppedEvents))
	if needed > max {
		return needed
	}
	dst := unsafe.Slice(out, len(stoppedEvents))
	for i, ev := range stoppedEvents {
		d := &dst[i]
		d.kind, d.ops = traceKinds[ev.Kind], C.int32_t(ev.Ops)
		d.start_ns, d.dur_ns, d.done_ns, d.bytes = C.int64_t(ev.Start), C.int64_t(ev.Dur), C.int64_t(ev.Done), C.int64_t(ev.Bytes)
		name := ev.Name
		if ev.Reason != "" && ev.Kind != "flush" {
			name += " (" + ev.Reason + ")"
		}
		setErr(&d.name[0], C.int64_t(len(d.name)), name)
	}
	stoppedEvents = nil
	return needed
}
