package engine

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"torchtpu/pjrt"
)

// TraceEvent is one thing the engine did, recorded while a trace is active.
// Times are nanoseconds since the Unix epoch (the clock Python's
// time.time_ns reads), so host ranges recorded elsewhere line up.
type TraceEvent struct {
	Kind   string `json:"kind"` // compile, load, execute, flush, h2d, d2h, fallback
	Name   string `json:"name"`
	Start  int64  `json:"start_ns"`
	Dur    int64  `json:"dur_ns"`
	Done   int64  `json:"done_ns,omitempty"` // execute: when the device finished (0: unknown)
	Bytes  int64  `json:"bytes,omitempty"`
	Ops    int    `json:"ops,omitempty"`
	Key    string `json:"key,omitempty"`
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	Device int    `json:"device"` // execute: the device the program ran on
}

// tracer is the bounded in-memory event buffer. Recording costs one atomic
// load while no trace is active. Execution completions arrive on plugin
// threads through pjrt.Event.OnReady, so the buffer has its own lock (never
// taken while calling into the plugin).
type tracer struct {
	on       atomic.Bool
	mu       sync.Mutex
	events   []TraceEvent
	limit    int
	dropped  int64
	gen      int64        // bumped by StartTrace; late completions of an older trace are dropped
	inFlight atomic.Int64 // OnReady callbacks not yet delivered
	devNanos atomic.Int64 // device time of traced executions (metrics)
	lastDone int64        // completion time of the latest traced execution
}

// ErrTraceActive reports a second trace started while one records.
var ErrTraceActive = errors.New("torchtpu: a trace is already active (torch.tpu.trace and the profiler integration cannot nest)")

// StartTrace clears the event buffer and records up to limit events.
func (e *Engine) StartTrace(limit int) error {
	t := &e.tr
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on.Load() {
		return ErrTraceActive
	}
	if limit <= 0 {
		limit = 1 << 20
	}
	t.events, t.limit, t.dropped = nil, limit, 0
	t.gen++
	t.on.Store(true)
	return nil
}

// StopTrace stops recording, waits (up to a second) for the completion
// times of executions still in flight, and returns the events as JSON:
// {"events": [...], "dropped": n}. The buffer is emptied.
func (e *Engine) StopTrace() []byte {
	events, dropped := e.StopTraceEvents()
	out, _ := json.Marshal(struct {
		Events  []TraceEvent `json:"events"`
		Dropped int64        `json:"dropped"`
	}{events, dropped})
	return out
}

// StopTraceEvents is StopTrace returning the events themselves and the
// count of those dropped.
func (e *Engine) StopTraceEvents() ([]TraceEvent, int64) {
	t := &e.tr
	t.on.Store(false)
	for deadline := time.Now().Add(time.Second); t.inFlight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	events := t.events
	t.events = nil
	return events, t.dropped
}

// tracing reports whether a trace records now.
func (e *Engine) tracing() bool { return e.tr.on.Load() }

// record appends ev and returns its index, or -1 when the buffer is full.
func (t *tracer) record(ev TraceEvent) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.events) >= t.limit {
		t.dropped++
		return -1
	}
	t.events = append(t.events, ev)
	return len(t.events) - 1
}

// span records an event of kind that started at t0 and ends now.
func (e *Engine) span(kind, name string, t0 time.Time, ev TraceEvent) {
	if !e.tracing() {
		return
	}
	ev.Kind, ev.Name = kind, name
	ev.Start, ev.Dur = t0.UnixNano(), time.Since(t0).Nanoseconds()
	e.tr.record(ev)
}

// spanAt records an event of the given kind that ran from t0 to t1 (work
// done off the engine's thread, recorded when it is taken).
func (e *Engine) spanAt(kind, name string, t0, t1 time.Time, ev TraceEvent) {
	if !e.tracing() {
		return
	}
	ev.Kind, ev.Name = kind, name
	ev.Start, ev.Dur = t0.UnixNano(), t1.Sub(t0).Nanoseconds()
	e.tr.record(ev)
}

// traceExecution records launch l, which started at t0, and asks the plugin
// for its completion time (ev nil: the launch has finished, so it completes
// now). The device time of executions traced this way is added to the
// metrics.
func (e *Engine) traceExecution(l launch, t0 time.Time, ev *pjrt.Event) {
	if !e.tracing() {
		return
	}
	t := &e.tr
	now := time.Now()
	rec := TraceEvent{Kind: "execute", Name: "execute", Start: t0.UnixNano(), Dur: now.Sub(t0).Nanoseconds(),
		Ops: l.ops, Key: l.key, Detail: l.what, Device: l.device}
	if ev == nil {
		rec.Done = now.UnixNano()
	}
	i := t.record(rec)
	if i < 0 {
		return
	}
	t.mu.Lock()
	gen := t.gen
	if ev == nil {
		t.devNanos.Add(rec.Done - max(rec.Start, t.lastDone))
		t.lastDone = rec.Done
	}
	t.mu.Unlock()
	if ev == nil {
		return
	}
	t.inFlight.Add(1)
	err := ev.OnReady(func(now int64, _ error) {
		t.mu.Lock()
		if gen == t.gen && i < len(t.events) {
			t.events[i].Done = now
			t.devNanos.Add(now - max(t.events[i].Start, t.lastDone))
			t.lastDone = now
		}
		t.mu.Unlock()
		t.inFlight.Add(-1)
	})
	if err != nil {
		t.inFlight.Add(-1)
	}
}
