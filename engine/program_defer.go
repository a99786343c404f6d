package engine

import (
	"fmt"
	"slices"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// Deferred replays (fused mode). A compiled training step reaches the engine
// as several compiled graphs: Dynamo breaks the step at loss.backward(), so
// the forward, the backward (run by autograd) and the optimizer step are a
// program each. In fused mode a replay does not launch its program: the ops
// captured into it are pasted into the pending graph, onto the current values
// of the inputs' storages, as a planned op's fragment is (plan_fused.go). The
// programs of one step then run as one program at the step boundary, with the
// eager ops between them (gradient accumulation, AOTAutograd's input updates),
// and parameters and optimizer state are donated by the flush as any written
// storage is. TORCHTPU_DEFER_COMPILED=0 launches each replay at once.

// In strict mode a program captured by torch.compile(mode="reduce-overhead")
// opens a compiled step when it replays: the engine records as in fused mode
// until its next flush (the optimizer step's mark, a sync, the size cap), then
// returns to strict mode, so such a step also launches as one program.

// deferred is what a deferred replay pastes: the captured graph as a
// fragment whose parameters are all the capture's graph parameters, the
// source of each, and the fragment value of each of the program's results.
type deferred struct {
	frag   *hlo.Fragment
	refs   []hlo.Ref // one per Program.results
	inputs []int     // the program input each fragment input reads (its bindInput parameters, in order)
	extra  []bind    // the program's other parameters, one per fragment parameter
	consts []*pjrt.Buffer
}

// makeDeferred cuts the captured graph g (which held nodes ops and params
// parameters when the capture began) into p.defer, so that p can be replayed
// into a pending graph. vals are the values of p.results; binds the sources of
// the parameters the module takes (used, in order) and args their buffers
// during the capture. A graph that cannot be cut is only ever launched.
func (e *Engine) makeDeferred(p *Program, c *capture, g *graph, vals []*hlo.Value, used []int, args []*pjrt.Buffer, bufInput map[*pjrt.Buffer]int) {
	if c.nodes != 0 || c.params != 0 || len(g.params) != g.b.NumParams() {
		return
	}
	frag, refs, ok := g.b.Cut(0, 0, nil, vals)
	if !ok {
		return
	}
	d := &deferred{}
	var binds []bind
	known := map[*pjrt.Buffer]bind{}
	for k := range used {
		known[args[k]] = p.binds[k]
	}
	for _, buf := range g.params {
		b, ok := known[buf]
		switch {
		case ok:
		case hasKey(bufInput, buf):
			b = bind{kind: bindInput, index: bufInput[buf]}
		case hasKey(c.seeds, buf):
			b = bind{kind: bindSeed, index: c.seeds[buf]}
		case hasKey(c.offsets, buf):
			b = bind{kind: bindOffset, index: c.offsets[buf]}
		default:
			cp, err := e.copyBuffer(buf)
			if err != nil {
				d.release()
				return
			}
			d.consts = append(d.consts, cp)
			b = bind{kind: bindConst, buf: cp}
		}
		binds = append(binds, b)
	}
	// The inputs' values become the fragment's inputs, as a planned op's arguments are
	// (plan_fused.go), so that a step tape can hold the replay as one of its ops (program_tape.go).
	asInput := make([]bool, len(binds))
	for k, b := range binds {
		if asInput[k] = b.kind == bindInput; asInput[k] {
			d.inputs = append(d.inputs, b.index)
		} else {
			d.extra = append(d.extra, b)
		}
	}
	d.frag, d.refs = frag.ParamsAsInputs(asInput, refs)
	p.deferred = d
}

// release frees the constants d keeps beyond its program's.
func (d *deferred) release() { d.releaseWith((*pjrt.Buffer).Destroy) }

// releaseWith hands the constants d keeps beyond its program's to drop.
func (d *deferred) releaseWith(drop func(*pjrt.Buffer)) {
	for _, b := range d.consts {
		drop(b)
	}
	d.consts = nil
}

// defers reports whether a replay of p goes into the pending graph.
func (e *Engine) defers(p *Program) bool {
	// Not while a tensor grows by appends (a decoding loop): its padded values
	// would be pasted at shapes that change with the length, so the replay
	// launches as its own program, as step tapes wait then too.
	return p.deferred != nil && e.mode == ModeFused && !e.noDefer && p.stores == nil && e.capture == nil && !e.padSeen
}

// deferProgram records a replay of p on inputs (with seeds) into the pending
// graph of p's device. Its fresh results are new storages holding pending
// values, and the storages of the inputs it writes take theirs. ok is false,
// with nothing recorded, when a storage's value no longer fits the capture's:
// the caller then launches the program.
func (e *Engine) deferProgram(p *Program, inputs []*TensorDesc, seeds []int64) (outs []OutTensor, ok bool, err error) {
	sts := make([]*Storage, len(inputs))
	for i, t := range inputs {
		st, err := e.storageOf(t)
		if err != nil {
			return nil, false, fmt.Errorf("torchtpu: compiled program input %d: %w", i, err)
		}
		if st.device != p.device {
			return nil, false, &MismatchError{fmt.Sprintf("input %d is on tpu:%d, the program was captured on tpu:%d", i, st.device, p.device)}
		}
		sts[i] = st
	}
	if err := e.useDevice(p.device); err != nil {
		return nil, false, err
	}
	s, targs, outs, done, err := e.programStep(p, inputs)
	if done {
		return outs, true, err
	}
	defer func() {
		if !ok || err != nil { // launched instead, or failed: the segment cannot become a tape
			e.leaveTape(departProgram)
		}
	}()
	first := map[uint64]int{}
	for i, t := range inputs {
		e.unpad(sts[i])
		if err := e.materialize(sts[i], t.DType); err != nil {
			return nil, false, err
		}
		if _, ok := first[t.Addr]; !ok {
			first[t.Addr] = i
		}
		if err := p.sig[i].check(i, t, sts[i], first[t.Addr]); err != nil {
			return nil, false, err
		}
	}
	g, d := e.d.g, p.deferred
	n0 := len(g.params)
	ins := make([]*hlo.Value, len(d.inputs))
	for k, i := range d.inputs {
		if ins[k] = e.storageValue(sts[i]); ins[k] == nil {
			return nil, false, nil
		}
	}
	types := d.frag.Params()
	params := make([]*hlo.Value, len(d.extra))
	for k, b := range d.extra {
		switch b.kind {
		case bindConst: // a position of its own at each paste, as a step tape's sources take them
			params[k] = g.scalarParam(b.buf, types[k])
		case bindOffset:
			params[k] = g.scalarParam(e.scalarBuffer(offsetKey(types[k], inputs[b.index])), types[k])
		case bindSeed:
			buf, err := e.client.BufferFromHost(encodeInt(seeds[b.index], types[k].Elem), pjrtType(types[k].Elem), nil, p.device)
			if err != nil {
				return nil, false, fmt.Errorf("torchtpu: uploading a seed: %w", err)
			}
			g.retired = append(g.retired, buf)
			params[k] = g.param(buf, types[k])
		}
	}
	vals, ok := g.b.Paste(d.frag, ins, params, d.refs)
	if !ok {
		return nil, false, nil
	}
	var fresh []OutTensor
	for _, r := range p.results {
		if r.kind == resultFresh {
			fresh = append(fresh, OutTensor{NBytes: numel(r.shape) * int64(r.dtype.Size()), DType: r.dtype, Sizes: slices.Clone(r.shape)})
		}
	}
	freshSts, outs, err := e.newResults(fresh)
	if err != nil {
		return nil, true, err
	}
	n := 0
	for k, r := range p.results {
		switch r.kind {
		case resultFresh:
			e.setPending(freshSts[n], vals[k])
			n++
		case resultInput:
			e.setPending(sts[r.index], vals[k])
		}
	}
	if s != nil {
		e.noteTapeOp(s, e.programPlan(p, inputs, sts, fresh), targs, outs, n0)
	}
	e.countDeferred(p)
	return outs, true, e.recorded(p.name)
}

// countDeferred counts a deferred replay of p in the pending graph: a program, and its captured
// ops (recorded adds the last one).
func (e *Engine) countDeferred(p *Program) {
	e.d.g.programs++
	e.m.CompiledDeferred++
	e.d.g.ops += p.ops - 1
}

// SetProgramStep makes the replays of program h open a compiled step.
func (e *Engine) SetProgramStep(h int64) {
	if p := e.programs.get(h); p != nil {
		e.mu.Lock()
		p.step = true
		e.mu.Unlock()
	}
}

// openStep switches strict mode to fused mode for the compiled step a replay
// of p begins. The pending graph is empty in strict mode, so nothing recorded
// before changes policy.
func (e *Engine) openStep(p *Program) {
	if p.step && e.mode == ModeStrict && !e.noDefer && p.deferred != nil && p.stores == nil && e.capture == nil {
		e.mode, e.stepOpen = ModeFused, true
	}
}

// closeStep returns to strict mode after the flush that ends an open
// compiled step, once no device holds pending work.
func (e *Engine) closeStep() {
	if !e.stepOpen {
		return
	}
	for _, s := range e.dev.states {
		if s.g.ops > 0 || len(s.g.pending) > 0 {
			return
		}
	}
	e.mode, e.stepOpen = ModeStrict, false
}
