package engine

import (
	"time"

	"torchtpu/pjrt"
)

// launch names one execution of a compiled program for the bookkeeping that
// every launch shares, whoever made it: a flush, a strict fast-path replay, a
// compiled graph's capture or replay, a collective among devices.
type launch struct {
	key     string // the program's name in traces ("s:<hash>" for graphs, "c:<hash>" for compiled graphs)
	what    string // what runs, for the trace event's detail (empty for flushes and eager ops)
	ops     int    // ops the program holds (1 for an eager op)
	device  int    // the device it runs on (replica 0's for a collective)
	donated int    // arguments whose buffers the program takes over
}

// execute launches exe on args, on l's device, and does a launch's
// bookkeeping (noteLaunch). place receives the results, swaps them into
// their storages and returns the buffers they replaced; those are kept with
// the launch's completion event and dropped once it has finished (track), so
// a launch that donates them returns at once.
func (e *Engine) execute(l launch, exe runner, args []*pjrt.Buffer, place func(results []*pjrt.Buffer) []*pjrt.Buffer) (*pjrt.Event, error) {
	t0 := time.Now()
	results, ev, err := exe.Execute(args, l.device)
	if err != nil {
		return nil, err
	}
	e.noteLaunch(l, t0, ev)
	e.track(ev, place(results))
	return ev, nil
}

// executeReplicated launches exe once on each of len(args) devices (a
// program compiled for that many replicas) and does a launch's bookkeeping.
// The plugin's replicated launch returns when every replica has finished, so
// the launch's host time includes its device time and its trace event ends
// when it returns.
func (e *Engine) executeReplicated(l launch, exe *pjrt.Executable, args [][]*pjrt.Buffer) ([][]*pjrt.Buffer, error) {
	t0 := time.Now()
	outs, err := exe.ExecuteReplicated(args)
	if err != nil {
		return nil, err
	}
	e.noteLaunch(l, t0, nil)
	return outs, nil
}

// noteLaunch counts a launch that started at t0 (executions, host launch
// time, donated buffers) and records its trace event; ev is its completion
// event, or nil when the launch has already finished.
func (e *Engine) noteLaunch(l launch, t0 time.Time, ev *pjrt.Event) {
	e.m.LaunchSeconds += time.Since(t0).Seconds()
	e.m.Executions++
	e.m.DonatedBuffers += int64(l.donated)
	e.traceExecution(l, t0, ev)
}
