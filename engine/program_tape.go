package engine

import (
	"slices"
	"strconv"
	"sync/atomic"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// Deferred replays in step tapes. A compiled training step in fused mode pastes each of its
// programs into the pending graph (program_defer.go); a step tape (step_tape.go) holds such a
// replay as one of its ops, so that a repeated step pastes nothing, as a repeated eager step
// records nothing: its flush launches the tape's program with the step's buffers bound. The
// replay's key is the program's (a serial number no other program gets) with its inputs' views
// and storages, as an op's; its plan reads the inputs' values, adds the program's constants and
// offsets as parameters, and writes the storages the program updates and its fresh results. A
// program that draws random numbers takes new seeds each call and is recorded as it goes.

// programSerial numbers the programs step tapes may hold; a freed program's number is never
// given again, so a tape naming it can never match.
var programSerial atomic.Int64

// tapeName returns p's op name in step tapes.
func (p *Program) tapeName() string {
	if p.tapeOp == "" {
		p.tapeOp = "compiled program #" + strconv.FormatInt(programSerial.Add(1), 10)
	}
	return p.tapeOp
}

// programStep checks a deferred replay of p on inputs against the device's step segment, as an
// op is checked (stepOp): done when a tape replayed it. Otherwise s is the segment that notes the
// replay as it is recorded (nil when none does), with targs the replay's arguments as an op's.
func (e *Engine) programStep(p *Program, inputs []*TensorDesc) (s *segment, targs []dispatch.Arg, outs []OutTensor, done bool, err error) {
	s = e.stepSegment()
	if s == nil || p.nseeds > 0 {
		e.leaveTape(departProgram)
		return nil, nil, nil, false, nil
	}
	handles := make([]any, len(inputs))
	for i, t := range inputs {
		handles[i] = t
	}
	targs = []dispatch.Arg{{Kind: dispatch.ArgTensorList, Handles: handles}}
	if s, outs, done, err = e.stepOp(s, p.tapeName(), dispatch.Entry{}, targs); done {
		if err == nil {
			e.countDeferred(p)
		}
		return nil, nil, outs, true, err
	}
	return s, targs, nil, false, nil
}

// programPlan returns the plan of a deferred replay of p just pasted on inputs, whose storages are
// sts, and whose fresh results have shapes fresh.
func (e *Engine) programPlan(p *Program, inputs []*TensorDesc, sts []*Storage, fresh []OutTensor) *plan {
	d := p.deferred
	pl := &plan{frag: d.frag, program: true, weight: p.ops, results: fresh}
	for _, i := range d.inputs {
		pl.sources = append(pl.sources, source{kind: srcArg, arg: 0, idx: i})
	}
	types := d.frag.Params()
	for k, b := range d.extra {
		switch b.kind {
		case bindConst:
			pl.sources = append(pl.sources, source{kind: srcConst, buf: b.buf})
		case bindOffset:
			pl.sources = append(pl.sources, source{kind: srcScalar, scalar: offsetKey(types[k], inputs[b.index])})
		default:
			return nil
		}
	}
	n := 0
	for k, r := range p.results {
		switch r.kind {
		case resultFresh:
			pl.writes = append(pl.writes, planWrite{result: n})
			n++
		case resultInput:
			st := sts[r.index]
			pl.writes = append(pl.writes, planWrite{result: -1, arg: 0, idx: r.index, dtype: st.dtype, shape: slices.Clone(st.shape)})
		default:
			continue
		}
		pl.refs = append(pl.refs, d.refs[k])
	}
	return pl
}

// offsetKey is the cached number a deferred replay binds for input t's storage offset.
func offsetKey(ty hlo.Type, t *TensorDesc) scalarKey {
	return scalarKey{elem: ty.Elem, bits: uint64(t.Offset), exact: true}
}

// forgetDeferred is called before a program's constants go: a segment replaying a tape records
// what it replayed (its graph then holds the constants as parameters, which retire with it), and
// the tapes, which may name them, are dropped.
func (e *Engine) forgetDeferred() {
	cur := e.d
	for _, st := range e.dev.states {
		if st.seg != nil && st.seg.tape != nil {
			e.d = st
			e.departTape(st.seg, departConstant)
		}
		st.tapes.reset()
	}
	e.d = cur
}
