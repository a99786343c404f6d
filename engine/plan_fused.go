package engine

import (
	"slices"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// The fused fast path. In fused mode an op records its lowering into the
// pending graph. When a plan is learned (plan.go), the ops the rule recorded
// are cut out as an hlo.Fragment, with where its inputs came from: which
// argument storages it read and which cached numbers it added as
// parameters, and which storages it gave new values. A replay pastes the
// fragment onto the arguments' current values.

// storageKind is a storage's kind of value, a part of the fused signature.
type storageKind uint8

const (
	stateUnshaped storageKind = iota // never written: reads as zeros of the view's dtype
	stateBuffer                      // a device buffer
	statePending                     // a value of the pending graph
	stateZero                        // shaped but without a value: zeros
)

// storageState returns st's kind of value.
func storageState(st *Storage) storageKind {
	switch {
	case !st.shaped:
		return stateUnshaped
	case st.pending != nil:
		return statePending
	case st.buf != nil:
		return stateBuffer
	}
	return stateZero
}

// planMark is the state of the device's graph before a planned op's rule
// runs; in fused mode also the argument values the rule will find as inputs
// and the writes it makes.
type planMark struct {
	mode          planMode
	sig           hlo.Hash
	g             *graph
	execs         int64
	extra         int
	nodes, params int
	inputs        [][2]int
	values        []*hlo.Value
	writes        []pendingWrite
	cold          *coldMark // strict mode: the op records into a cold run (cold_run.go)
}

type pendingWrite struct {
	st *Storage
	v  *hlo.Value
}

// storageValue returns the value st holds in the current graph without
// recording any op (nil for a storage that reads as zeros).
func (e *Engine) storageValue(st *Storage) *hlo.Value {
	switch storageState(st) {
	case statePending:
		return st.pending
	case stateBuffer:
		return e.d.g.param(st.buf, storedType(st.dtype, st.shape))
	}
	return nil
}

// markFused prepares m to plan the op about to run: it gives each argument
// storage with a value its graph value first, so that the rule's reads find
// them as inputs, and starts logging the op's writes. It reports false when
// two argument storages hold the same value: a plan could not tell them apart.
func (e *Engine) markFused(m *planMark, args []dispatch.Arg) bool {
	held := map[*hlo.Value]bool{}
	for at, st := range e.argStorages(args) {
		if v := e.storageValue(st); v != nil {
			if held[v] {
				return false
			}
			held[v] = true
			m.inputs = append(m.inputs, at)
			m.values = append(m.values, v)
		}
	}
	m.nodes, m.params = e.d.g.b.Len(), e.d.g.b.NumParams()
	e.fusedLog = m
	return true
}

// makeFusedPlan cuts the op just recorded after mark m into a plan, or
// returns nil when it cannot be replayed. A plan whose op uploaded values of
// its own has uploads set: only a step tape keeps it, re-running the rule for
// new uploads. A declared seed is a source of its own (srcSeed).
func (e *Engine) makeFusedPlan(m *planMark, args []dispatch.Arg, outs []OutTensor) *plan {
	g := e.d.g
	if g != m.g || e.m.Executions != m.execs || len(g.extra) != m.extra || len(g.params) != g.b.NumParams() {
		return nil // a flush, a host read, or a parameter outside the graph's list
	}
	p := &plan{}
	for _, in := range m.inputs {
		p.sources = append(p.sources, source{kind: srcArg, arg: in[0], idx: in[1]})
	}
	for _, b := range g.params[m.params:] {
		src, ok := e.scalarSource(b)
		if !ok {
			src, p.uploads = source{kind: srcUpload, buf: b}, true
		}
		p.seeded = p.seeded || src.kind == srcSeed
		p.sources = append(p.sources, src)
	}
	var result map[uint64]int
	p.results, result = resultShapes(outs)
	arg := argPositions(args)
	var want []*hlo.Value
	for _, w := range m.writes {
		if r, ok := result[w.st.addr]; ok {
			p.writes = append(p.writes, planWrite{result: r})
		} else if a, ok := arg[w.st.addr]; ok && w.st.shaped {
			p.writes = append(p.writes, planWrite{result: -1, arg: a[0], idx: a[1], dtype: w.st.dtype, shape: w.st.shape})
		} else {
			return nil
		}
		want = append(want, w.v)
	}
	frag, refs, ok := g.b.Cut(m.nodes, m.params, m.values, want)
	if !ok {
		return nil
	}
	p.frag, p.refs = frag, refs
	return p
}

// replayFused records plan p on args into the pending graph. It reports
// ok=false, having recorded nothing, when an argument's value no longer
// matches the plan (the caller then takes the full path). A seeded plan
// uploads this call's seeds; used is then a copy of p naming their buffers
// (a step tape binds them), otherwise p. m.values takes the argument
// storages' values the op read.
func (e *Engine) replayFused(p *plan, args []dispatch.Arg, m *planMark) (outs []OutTensor, used *plan, ok bool, err error) {
	g := e.d.g
	var inputs, params []*hlo.Value
	for _, src := range p.sources {
		if src.kind == srcArg {
			v := e.storageValue(e.argStorage(args, src.arg, src.idx))
			if v == nil {
				return nil, nil, false, nil
			}
			inputs = append(inputs, v)
		}
	}
	used = p
	if p.seeded {
		c := *p
		c.sources = slices.Clone(p.sources)
		used = &c
	}
	types := p.frag.Params()
	for i, src := range used.sources {
		switch src.kind {
		case srcScalar:
			params = append(params, g.scalarParam(e.scalarBuffer(src.scalar), types[len(params)]))
		case srcSeed:
			buf := e.seedBuffer(args, src.arg)
			g.retired = append(g.retired, buf)
			used.sources[i].buf = buf
			params = append(params, g.param(buf, types[len(params)]))
		}
	}
	vals, ok := g.b.Paste(p.frag, inputs, params, p.refs)
	if !ok {
		return nil, nil, false, nil
	}
	m.values = inputs
	sts, outs, err := e.newResults(p.results)
	if err != nil {
		return nil, used, true, err
	}
	for i, w := range p.writes {
		st := e.writtenStorage(sts, args, w)
		if w.result < 0 {
			st.shaped, st.dtype, st.shape = true, w.dtype, append([]int64{}, w.shape...)
		}
		e.setPending(st, vals[i])
		st.known = p.rangeOf(i)
	}
	e.m.FusedFastPathHits++
	return outs, used, true, nil
}
