package pjrt

/*
#include "capi.h"
PJRT_Error* tt_event_on_ready(const PJRT_Api* api, PJRT_Event* ev, uintptr_t handle);
*/
import "C"

import (
	"errors"
	"runtime/cgo"
	"time"
)

// OnReady asks the plugin to call f once the event completes, with the
// completion time (nanoseconds since the Unix epoch, read on the plugin's
// thread as it signals) and a non-nil error when the work failed. f runs on a plugin thread (or at once, on the
// caller's, when the event is already ready); it must be quick and must not
// call back into the plugin. C holds f as a runtime/cgo.Handle, a plain
// integer, until the call; the handle is deleted then.
func (e *Event) OnReady(f func(doneNanos int64, err error)) error {
	if e == nil {
		f(time.Now().UnixNano(), nil)
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ev == nil {
		f(time.Now().UnixNano(), e.err)
		return nil
	}
	h := cgo.NewHandle(f)
	if err := e.p.check("event on ready", C.tt_event_on_ready(e.p.api, e.ev, C.uintptr_t(h))); err != nil {
		h.Delete()
		return err
	}
	return nil
}

var errEventFailed = errors.New("pjrt: the event completed with an error")

//export ttGoEventReady
func ttGoEventReady(h C.uintptr_t, failed C.int, doneNanos C.int64_t) {
	handle := cgo.Handle(h)
	f := handle.Value().(func(int64, error))
	handle.Delete()
	if failed != 0 {
		f(int64(doneNanos), errEventFailed)
		return
	}
	f(int64(doneNanos), nil)
}
