package engine

import (
	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// The fused fast path. In fused mode an op records its lowering into the
// pending graph. The first time an op signature (opSignature with pending
// values) is seen, the rule runs and the ops it recorded are cut out as an
// hlo.Fragment, with where its inputs came from: which argument storages it
// read and which cached numbers it added as parameters, and which storages
// it gave new values. Later calls with the same signature paste the fragment
// onto the arguments' current values: no rule, no shape inference, no
// attribute text. Their rules passed the same checks the first time. Ops
// that read data to the host, draw random numbers, upload one-off inputs or
// report value ranges are never planned.

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

// fusedPlan replays one op signature in fused mode.
type fusedPlan struct {
	frag    *hlo.Fragment
	inputs  [][2]int     // (argument, tensor index) whose storage value feeds each fragment input
	scalars []scalarKey  // the number behind each parameter the fragment adds
	results []OutTensor  // functional results (shape and dtype; addresses are new each call)
	writes  []fusedWrite // the new storage values, in the order the op gave them
	refs    []hlo.Ref    // the fragment value of each write
}

// fusedWrite is a storage an op gave a new value: a functional result
// (result >= 0) or the storage of argument arg's tensor idx, with the dtype
// and base shape it has afterwards (a first write gives a storage its shape).
type fusedWrite struct {
	result, arg, idx int
	dtype            dispatch.DType
	shape            []int64
}

// fusedMark is the state of the pending graph before a planned op's rule runs.
type fusedMark struct {
	g             *graph
	nodes, params int
	extra         int
	execs         int64
	inputs        [][2]int
	values        []*hlo.Value
	writes        []pendingWrite
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
		return e.g.param(st.buf, hlo.T(st.dtype.Elem(), st.shape...))
	}
	return nil
}

// markFused prepares to plan the op about to run: it gives each argument
// storage with a value its graph value first, so that the rule's reads find
// them as inputs, and starts logging the op's writes. It returns nil when two
// argument storages hold the same value: a plan could not tell them apart.
func (e *Engine) markFused(args []dispatch.Arg) *fusedMark {
	m := &fusedMark{g: e.g, extra: len(e.g.extra), execs: e.m.Executions}
	seen := map[uint64]bool{}
	held := map[*hlo.Value]bool{}
	for i, a := range args {
		for j, h := range a.Handles {
			t := h.(*TensorDesc)
			if t.CPU || t.Addr == 0 || seen[t.Addr] {
				continue
			}
			seen[t.Addr] = true
			if v := e.storageValue(e.storages[t.Addr]); v != nil {
				if held[v] {
					return nil
				}
				held[v] = true
				m.inputs = append(m.inputs, [2]int{i, j})
				m.values = append(m.values, v)
			}
		}
	}
	m.nodes, m.params = e.g.b.Len(), e.g.b.NumParams()
	e.fusedLog = m
	return m
}

// makeFusedPlan cuts the op just recorded after mark m into a plan, or
// returns nil when it cannot be replayed.
func (e *Engine) makeFusedPlan(m *fusedMark, args []dispatch.Arg, outs []OutTensor) *fusedPlan {
	g := e.g
	if g != m.g || e.m.Executions != m.execs || len(g.extra) != m.extra || len(g.params) != g.b.NumParams() {
		return nil // a flush, a host read, or a parameter outside the graph's list
	}
	p := &fusedPlan{inputs: m.inputs}
	for _, b := range g.params[m.params:] {
		k, ok := e.scalarOf[b]
		if !ok {
			return nil // a one-off upload (seeds, indices)
		}
		p.scalars = append(p.scalars, k)
	}
	result := map[uint64]int{}
	for i, o := range outs {
		result[o.Addr] = i
		p.results = append(p.results, OutTensor{NBytes: o.NBytes, DType: o.DType, Sizes: o.Sizes})
	}
	arg := map[uint64][2]int{}
	for i, a := range args {
		for j, h := range a.Handles {
			if t := h.(*TensorDesc); !t.CPU && t.Addr != 0 {
				if _, seen := arg[t.Addr]; !seen {
					arg[t.Addr] = [2]int{i, j}
				}
			}
		}
	}
	var want []*hlo.Value
	for _, w := range m.writes {
		if r, ok := result[w.st.addr]; ok {
			p.writes = append(p.writes, fusedWrite{result: r})
		} else if a, ok := arg[w.st.addr]; ok && w.st.shaped {
			p.writes = append(p.writes, fusedWrite{result: -1, arg: a[0], idx: a[1], dtype: w.st.dtype, shape: w.st.shape})
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
// matches the plan (the caller then takes the full path).
func (e *Engine) replayFused(p *fusedPlan, args []dispatch.Arg) (outs []OutTensor, ok bool, err error) {
	g := e.g
	inputs := make([]*hlo.Value, len(p.inputs))
	for i, a := range p.inputs {
		if inputs[i] = e.storageValue(e.argStorage(args, a[0], a[1])); inputs[i] == nil {
			return nil, false, nil
		}
	}
	types := p.frag.Params()
	params := make([]*hlo.Value, len(p.scalars))
	for i, k := range p.scalars {
		params[i] = g.scalarParam(e.scalarBuffer(k), types[i])
	}
	vals, ok := g.b.Paste(p.frag, inputs, params, p.refs)
	if !ok {
		return nil, false, nil
	}
	sts, outs, err := e.newResults(p.results)
	if err != nil {
		return nil, true, err
	}
	for i, w := range p.writes {
		st := e.writtenStorage(sts, args, w.result, w.arg, w.idx)
		if w.result < 0 {
			st.shaped, st.dtype, st.shape = true, w.dtype, append([]int64{}, w.shape...)
		}
		e.setPending(st, vals[i])
	}
	e.m.FusedFastPathHits++
	return outs, true, nil
}
