package engine

import "torchtpu/pjrt"

// inFlight is a launch that may still run: its completion event and the
// buffers its results replaced. Destroying a buffer that a running program
// took over (a donated input) blocks until the program ends, so replaced
// buffers are destroyed once it has: a launch returns at once even when it
// updates parameters in place.
type inFlight struct {
	ev       *pjrt.Event
	replaced []*pjrt.Buffer
}

// track keeps the completion event of a launch with the buffers its results
// replaced, and releases launches that have finished (the last event stays,
// so that Synchronize can report its error).
func (e *Engine) track(ev *pjrt.Event, replaced []*pjrt.Buffer) {
	e.events = append(e.events, inFlight{ev, replaced})
	for len(e.events) > 0 && e.events[0].ev.IsReady() {
		if len(e.events) == 1 {
			e.dropReplaced(&e.events[0])
			break
		}
		e.release(e.events[0])
		e.events = e.events[1:]
	}
}

// dropReplaced drops the buffers f's results replaced (dropBuffer: a pending
// graph that reads one keeps it until its own launch), destroying the others
// together.
func (e *Engine) dropReplaced(f *inFlight) {
	kept := 0
	for _, b := range f.replaced {
		if b == nil {
			continue
		}
		if g := e.graphReading(b); g != nil {
			g.retired = append(g.retired, b)
			continue
		}
		f.replaced[kept] = b
		kept++
	}
	pjrt.DestroyBuffers(f.replaced[:kept])
	f.replaced = nil
}

// release drops f's replaced buffers and destroys its event; f has finished.
func (e *Engine) release(f inFlight) {
	e.dropReplaced(&f)
	f.ev.Destroy()
}
