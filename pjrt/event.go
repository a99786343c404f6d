package pjrt

/*
#include "capi.h"
*/
import "C"

import "sync"

// Event signals the completion of asynchronous work (an execution, a transfer).
type Event struct {
	p  *Plugin
	mu sync.Mutex
	ev *C.PJRT_Event
	// err, when set, is the status of an event that could not be created.
	err error
}

// newEvent wraps ev; a nil ev yields an Event that is always ready.
func newEvent(p *Plugin, ev *C.PJRT_Event) *Event {
	return &Event{p: p, ev: ev}
}

// Await blocks until the event is ready and returns its error status.
// Await may be called more than once; after Destroy it returns nil.
func (e *Event) Await() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	ev, err := e.ev, e.err
	e.mu.Unlock()
	if ev == nil {
		return err
	}
	return e.p.check("await event", C.tt_event_await(e.p.api, ev))
}

// IsReady reports whether the event has completed (successfully or not).
func (e *Event) IsReady() bool {
	if e == nil {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ev == nil {
		return true
	}
	var r C.int
	if err := e.p.check("event is ready", C.tt_event_is_ready(e.p.api, e.ev, &r)); err != nil {
		return true
	}
	return r != 0
}

// Destroy releases the event. It is idempotent and must not race with Await.
func (e *Event) Destroy() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ev != nil {
		_ = e.p.check("destroy event", C.tt_event_destroy(e.p.api, e.ev))
		e.ev = nil
	}
}
