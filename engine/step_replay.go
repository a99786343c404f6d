package engine

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// Step replay: a segment whose first op matches a tape's follows it (step_tape.go). Each op is
// checked against the tape's op at its position, by key; a match gives the op's results storages
// and marks the slots it writes, recording nothing. The flush that ends the segment binds the
// buffers the tape names and launches the tape's program. An op that departs from the tape, and
// anything outside ops that needs the pending graph, first records the ops replayed so far as the
// usual path would have (their fragments pasted on the same values), so the segment goes on as an
// ordinary recording from there, and may become the next tape.

// replayStep follows s's tape with op. done reports that the op was replayed; otherwise the
// segment has departed from the tape and the caller records the op as usual.
func (e *Engine) replayStep(s *segment, op string, entry dispatch.Entry, args []dispatch.Arg) (outs []OutTensor, done bool, err error) {
	te := &s.tape.ops[s.next]
	same := bytes.Equal(s.hard, te.hard)
	if te.p.program && !(same && bytes.Equal(s.soft, te.soft)) { // a program has no rule to run again
		e.departTape(s, e.departWhy(s, te, same, "its numbers differ, and a compiled graph's run has no rule to run again"))
		return nil, false, nil
	}
	if same && !te.p.uploads && bytes.Equal(s.soft, te.soft) {
		outs, err = e.replayTapeOp(s, te, args)
		if err != nil {
			return nil, true, err
		}
		e.m.StepReplayOps++
		return outs, true, e.recorded(op)
	}
	// Another hard key may still be the first call of an out= op whose outs PyTorch resizes (an
	// empty out, as arange's): its rule asks for the resize and the call that follows matches.
	if same || entry.Variant == dispatch.OutVariant {
		outs, ok, err := e.rerunTapeOp(s, te, op, entry, args, same)
		if ok {
			e.m.StepReplayReruns++
			return outs, true, e.recorded(op)
		}
		if _, resize := err.(*ResizeError); resize {
			return nil, true, err
		}
	}
	e.departTape(s, e.departWhy(s, te, same, "its numbers or uploads differ, and its rule, run again, recorded another fragment"))
	return nil, false, nil
}

// replayTapeOp gives te's results new storages and marks the storages te writes as given a value.
// A seeded op uploads this call's seeds: te's plan becomes a copy naming their buffers, which the
// segment's launch binds.
func (e *Engine) replayTapeOp(s *segment, te *tapeOp, args []dispatch.Arg) ([]OutTensor, error) {
	if te.p.seeded {
		c := *te.p
		c.sources = slices.Clone(te.p.sources)
		for j, src := range c.sources {
			if src.kind == srcSeed {
				c.sources[j].buf = e.seedBuffer(args, src.arg)
				s.retired = append(s.retired, c.sources[j].buf)
			}
		}
		te.p = &c
	}
	sts, outs, err := e.newResults(te.p.results)
	if err != nil {
		return nil, err
	}
	for _, st := range sts {
		s.add(st)
	}
	for _, w := range te.p.writes {
		st := e.writtenStorage(sts, args, w)
		if w.result < 0 && !(st.shaped && st.dtype == w.dtype && slices.Equal(st.shape, w.shape)) {
			st.shaped, st.dtype, st.shape = true, w.dtype, slices.Clone(w.shape)
		}
		s.written[st.slot] = true
	}
	s.applyRanges(te)
	s.next++
	return outs, nil
}

// storageSnap is a storage's metadata before a rule ran on it.
type storageSnap struct {
	st     *Storage
	shaped bool
	dtype  dispatch.DType
	shape  []int64
	known  *intRange
}

// rerunTapeOp runs op's rule on a graph of its own, on stand-ins for the values the segment gave
// its arguments, and reports whether it recorded te's fragment again, reading and writing the same
// slots (only when match: the op's hard key is te's): the tape's program then computes the op, its
// parameters bound to the numbers and uploads of this run, and te takes them. Otherwise the run
// leaves no trace, ok is false, and err is the rule's error, if any. A rule that reads values to
// the host is not run here.
func (e *Engine) rerunTapeOp(s *segment, te *tapeOp, op string, entry dispatch.Entry, args []dispatch.Arg, match bool) (outs []OutTensor, ok bool, err error) {
	if entry.Rule.Needs.Results || len(e.hostArgsToRead(entry.Rule, args)) > 0 {
		return nil, false, nil
	}
	saved, g := e.d.g, newGraph()
	e.d.g = g
	var snaps []storageSnap
	var standIns []*Storage
	for _, a := range args {
		for _, h := range a.Handles {
			t := h.(*TensorDesc)
			if t.CPU || t.Addr == 0 || slices.ContainsFunc(snaps, func(n storageSnap) bool { return n.st.addr == t.Addr }) {
				continue
			}
			st := e.storages[t.Addr]
			snaps = append(snaps, storageSnap{st, st.shaped, st.dtype, st.shape, st.known})
			if s.has(st) && s.written[st.slot] {
				st.pending = g.b.Param(storedType(st.dtype, st.shape))
				g.params = append(g.params, nil) // no buffer: the value of an earlier op
				standIns = append(standIns, st)
			}
		}
	}
	var p *plan
	m := &planMark{mode: planFused, g: g, execs: e.m.Executions}
	if e.markFused(m, args) {
		outs, _, err = e.lower(op, entry, args)
		e.fusedLog = nil
		if err == nil && e.d.g == g {
			p = e.makeFusedPlan(m, args, outs)
		} else if err != nil {
			outs = nil
		}
	}
	e.fusedLog = nil
	e.d.g = saved
	for _, st := range g.pending {
		st.pending = nil
	}
	for _, st := range standIns {
		st.pending = nil
	}
	same := p != nil && match && samePlan(p, te.p)
	if same {
		for _, o := range outs {
			s.add(e.storages[o.Addr])
		}
		if !slices.Equal(s.writtenRanges(te.writes), te.known) { // a range a later op may rely on differs
			n := len(s.slots) - len(outs)
			for _, st := range s.slots[n:] {
				st.seg = 0
			}
			s.slots, s.ext, s.written = s.slots[:n], s.ext[:n], s.written[:n]
			same = false
		}
	}
	if !same {
		for _, n := range snaps {
			n.st.shaped, n.st.dtype, n.st.shape, n.st.known = n.shaped, n.dtype, n.shape, n.known
		}
		for _, o := range outs {
			if st, live := e.storages[o.Addr]; live {
				e.freeStorage(st)
			}
		}
		pjrt.DestroyBuffers(g.retired)
		return nil, false, err
	}
	for _, slot := range te.writes {
		s.written[slot] = true
	}
	s.retired = append(s.retired, g.retired...)
	te.soft, te.p = bytes.Clone(s.soft), p
	s.next++
	return outs, true, nil
}

// samePlan reports whether plans a and b record the same fragment from the same arguments, with
// the same kinds of other sources, writes and results.
func samePlan(a, b *plan) bool {
	if !a.frag.Equal(b.frag) || !slices.Equal(a.refs, b.refs) || len(a.sources) != len(b.sources) ||
		len(a.writes) != len(b.writes) || len(a.results) != len(b.results) {
		return false
	}
	for i, x := range a.sources {
		y := b.sources[i]
		if x.kind != y.kind || x.kind == srcArg && (x.arg != y.arg || x.idx != y.idx) {
			return false
		}
	}
	for i, w := range a.writes {
		v := b.writes[i]
		if w.result != v.result || w.arg != v.arg || w.idx != v.idx || w.dtype != v.dtype || !slices.Equal(w.shape, v.shape) {
			return false
		}
	}
	for i, r := range a.results {
		q := b.results[i]
		if r.NBytes != q.NBytes || r.DType != q.DType || !slices.Equal(r.Sizes, q.Sizes) {
			return false
		}
	}
	return true
}

// departTape ends s's replay: the ops replayed so far are recorded into the pending graph as the
// usual path records them (each tape op's fragment pasted on the values its slots hold), and the
// segment records from here on.
func (e *Engine) departTape(s *segment, why string) {
	t := s.tape
	if t == nil {
		return
	}
	e.m.StepReplayDeparts++
	e.logDeparture(s, why)
	log := e.fusedLog
	e.fusedLog = nil
	defer func() { e.fusedLog = log }()
	s.tape, s.rec = nil, &tape{}
	g := e.d.g
	vals := make([]*hlo.Value, len(s.slots))
	for i := range s.next {
		te := t.ops[i]
		n0 := len(g.params)
		types := te.p.frag.Inputs()
		inputs := make([]*hlo.Value, len(te.in))
		for k, slot := range te.in {
			if inputs[k] = vals[slot]; inputs[k] == nil {
				inputs[k] = g.param(s.ext[slot], types[k])
			}
		}
		ptypes := te.p.frag.Params()
		extras := te.p.sources[len(te.in):]
		params := make([]*hlo.Value, len(extras))
		for j, x := range extras {
			b := x.buf
			if x.kind == srcScalar {
				b = e.scalarBuffer(x.scalar)
			}
			params[j] = g.scalarParam(b, ptypes[j])
		}
		out, ok := g.b.Paste(te.p.frag, inputs, params, te.p.refs)
		if !ok {
			panic(fmt.Errorf("internal: a replayed op's fragment does not fit its values"))
		}
		for w, slot := range te.writes {
			vals[slot] = out[w]
			if st := s.slots[slot]; e.storages[st.addr] == st {
				e.setPending(st, out[w])
			}
		}
		s.applyRanges(&te)
		if s.rec != nil && !e.noteParams(s, s.rec, &te, n0) {
			s.rec = nil
		}
		if s.rec != nil {
			s.rec.ops = append(s.rec.ops, te)
		}
	}
	g.retired = append(g.retired, s.retired...)
	s.retired = nil
}

// leaveTape is called before the pending graph of the current device is used, or a storage of
// its segment changed, outside an op: a replay records what it replayed, and the segment can no
// longer become a tape.
func (e *Engine) leaveTape(why string) {
	if s := e.d.seg; s != nil {
		e.departTape(s, why)
		s.rec = nil
	}
}

// replayHolds reports whether st is given a value by the ops of a replay in progress, which only
// the launch of its program computes.
func (e *Engine) replayHolds(st *Storage) bool {
	s := e.dev.state(st.device).seg
	return s != nil && s.tape != nil && s.has(st) && s.written[st.slot]
}

// keepForReplay keeps the buffer of storage st, which PyTorch frees, when a replay in progress
// binds it: it is destroyed once the replay's program has run.
func (e *Engine) keepForReplay(st *Storage) bool {
	s := e.dev.state(st.device).seg
	if s == nil || s.tape == nil || !s.has(st) || st.buf == nil || s.ext[st.slot] != st.buf {
		return false
	}
	s.retired = append(s.retired, st.buf)
	return true
}

// launchReplay runs the segment s has replayed to the end of its tape: it binds the buffers and
// numbers the tape names, launches the tape's program, and gives each storage the segment wrote
// its result. It reports false, having done nothing, when the program cannot stand for the
// segment: it ended early, a storage it wrote is alive but not an output of the program, or the
// program left the cache.
func (e *Engine) launchReplay(s *segment) (bool, error) {
	t := s.tape
	if s.next != len(t.ops) {
		return false, nil
	}
	for slot, w := range s.written {
		if w && t.slotOut[slot] < 0 && e.storages[s.slots[slot].addr] == s.slots[slot] {
			return false, nil
		}
	}
	for _, st := range s.slots {
		if st != nil && st.pad != nil { // a padded buffer is not the shape the program binds
			return false, nil
		}
	}
	x, ok := e.cache.Get(t.key)
	if !ok {
		return false, nil
	}
	prog := x.(*program)
	args := make([]*pjrt.Buffer, len(t.args))
	for i, a := range t.args {
		if a.op < 0 {
			args[i] = s.ext[a.idx]
			continue
		}
		te := &t.ops[a.op]
		switch x := te.p.sources[len(te.in)+int(a.idx)]; x.kind {
		case srcScalar:
			args[i] = e.scalarBuffer(x.scalar)
		default:
			args[i] = x.buf
		}
	}
	// As in a flush, a storage whose buffer the program does not take over holds two while it runs.
	transient := int64(0)
	for k, slot := range t.outs {
		if st := s.slots[slot]; st.buf != nil && !t.inPlace[k] && e.storages[st.addr] == st {
			transient += st.nbytes
		}
	}
	e.m.PeakBytes = max(e.m.PeakBytes, e.liveB+transient)
	why := e.why
	e.why = ""
	if why == "" {
		why = whySynchronize
	}
	g := e.d.g
	e.d.g, e.d.seg = newGraph(), nil
	tFlush := time.Now()
	e.fl = flushCtx{reason: why, ops: g.ops, first: g.first}
	e.m.Flushes[why]++
	e.m.CacheHits++
	e.lastProg = t.key
	defer e.span("flush", "flush: "+why, tFlush, TraceEvent{Ops: g.ops, Reason: why, Detail: "step replay"})
	l := launch{key: t.key, ops: g.ops, device: e.dev.cur, donated: t.donated}
	// Buffers of storages freed during the replay may be donated inputs: they are dropped with
	// the buffers the results replace, once the launch has finished.
	_, err := e.execute(l, prog.run(), args, func(rs []*pjrt.Buffer) []*pjrt.Buffer {
		replaced := append(make([]*pjrt.Buffer, 0, len(rs)+len(s.retired)), s.retired...)
		for k, slot := range t.outs {
			st := s.slots[slot]
			if e.storages[st.addr] != st { // freed since: the result has no reader
				replaced = append(replaced, rs[k])
				continue
			}
			replaced = append(replaced, st.buf)
			st.buf = rs[k]
		}
		return replaced
	})
	if err != nil {
		for _, b := range s.retired {
			b.Destroy()
		}
		return true, fmt.Errorf("torchtpu: executing a replayed step of %d ops: %w", g.ops, err)
	}
	e.m.StepReplays++
	return true, nil
}

// stepOp checks op against segment s before it runs: when s replays a tape, a matching op is
// replayed (done). Otherwise it returns the segment that notes the op as it is recorded, or nil.
// An op after the end of the tape launches the tape's program first, and starts a new segment.
func (e *Engine) stepOp(s *segment, op string, entry dispatch.Entry, args []dispatch.Arg) (rec *segment, outs []OutTensor, done bool, err error) {
	if s.tape != nil && s.next == len(s.tape.ops) {
		e.why = whyTapeEnd
		if err := e.flush(); err != nil {
			return nil, nil, true, err
		}
		if s = e.stepSegment(); s == nil {
			return nil, nil, false, nil
		}
	}
	first := s.tape == nil && len(s.slots) == 0
	s.opSlots = len(s.slots)
	if !e.tapeKey(s, op, args) {
		e.leaveTape(departUnknown)
		return nil, nil, false, nil
	}
	if first {
		if t := e.d.tapeFor(s.hard); t != nil {
			s.tape, s.rec, s.next = t, nil, 0
		}
	}
	if s.tape != nil {
		if outs, done, err = e.replayStep(s, op, entry, args); done {
			return nil, outs, true, err
		}
	}
	return s, nil, false, nil
}

// offTapeOnError undoes the slots an op that asks for its outs to be resized gave (PyTorch resizes
// them and calls again, the same way every step), and keeps a segment in which an op failed
// otherwise from becoming a tape: the failed op gave storages slots that a clean run would not.
func (e *Engine) offTapeOnError(err *error) {
	s := e.d.seg
	if *err == nil || s == nil {
		return
	}
	if _, resize := (*err).(*ResizeError); resize && s.opSlots <= len(s.slots) {
		for _, st := range s.slots[s.opSlots:] {
			st.seg = 0
		}
		s.slots, s.ext, s.written = s.slots[:s.opSlots], s.ext[:s.opSlots], s.written[:s.opSlots]
		return
	}
	s.rec = nil
}
