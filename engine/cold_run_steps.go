package engine

import (
	"fmt"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// A cold run launches op by op. Each op of a run notes a step while it
// records: the one-op program strict mode runs it with (its strict plan's),
// what feeds each of that program's parameters (a value of the run's graph,
// or a buffer: a storage's, a cached number's, a seed's) and the graph values
// its results are. The pool compiles the steps' programs in parallel while the
// run records; the flush that ends the run waits for them, compiling here any
// that no worker has started, and launches them in order, each on the buffers
// the steps before it made. So a run computes exactly what its ops one by one
// compute, and its compiles use every core. A step whose program would take
// over a buffer still needed after it (a value two storages hold, one of which
// the op overwrites in place) launches the op's program donating nothing. An
// op whose result is the value it read (a copy into a new tensor) makes a
// buffer anew, so storages sharing that value each keep one. A run some op of
// which noted no step (its op has no one-op program) launches as one program
// instead.

// runStep is one op of a cold run: its program and how to bind it.
type runStep struct {
	key     string
	args    []stepArg    // by parameter position of the program's builder
	outs    []*hlo.Value // the graph value of each program result, in order
	donates []*hlo.Value // argument values the program may take over (an op's in-place writes)
	// plain returns the key of the op's program donating nothing (nil: none can
	// be made), which plainArgs and plainOuts bind.
	plain     func() (string, error)
	plainArgs []stepArg
	plainOuts []*hlo.Value
}

// stepArg feeds one program parameter: value v of the run's graph, or buffer b.
type stepArg struct {
	v *hlo.Value
	b *pjrt.Buffer
}

// noteStep adds the step of the op just recorded into the device's cold run
// by fused plan p under strict plan sp, whose program parameters follow
// sp.sources: m.values holds the values p's argument sources held before the
// op, p's seed sources this call's seeds. Without a strict plan the run can no
// longer launch op by op.
func (e *Engine) noteStep(sp *plan, plain func() (string, error), m *planMark, p *plan, args []dispatch.Arg, outs []OutTensor) {
	r := e.d.g.cold
	if r == nil || !r.stepwise {
		return
	}
	if sp == nil || sp.key == "" || p == nil {
		r.stepwise = false
		return
	}
	inputs := map[[2]int]*hlo.Value{}
	seeds := map[int]*pjrt.Buffer{}
	k := 0
	for _, src := range p.sources {
		switch src.kind {
		case srcArg:
			if k < len(m.values) {
				inputs[[2]int{src.arg, src.idx}] = m.values[k]
			}
			k++
		case srcSeed:
			seeds[src.arg] = src.buf
		}
	}
	if k != len(m.values) {
		r.stepwise = false
		return
	}
	st := runStep{key: sp.key}
	var ok bool
	if st.args, st.outs, st.donates, ok = e.bindStep(sp, inputs, seeds, args, outs); !ok {
		r.stepwise = false
		return
	}
	if plain != nil { // its program follows p's sources and writes, which sp's may order otherwise
		if st.plainArgs, st.plainOuts, _, ok = e.bindStep(p, inputs, seeds, args, outs); ok {
			st.plain = plain
		}
	}
	r.steps = append(r.steps, st)
}

// bindStep returns what feeds each program parameter of plan q, which follow
// q.sources, and the graph value of each of its results, which follow
// q.writes, with the argument values it may take over; inputs and seeds are
// the op's argument values and seed buffers. ok is false when one is missing.
func (e *Engine) bindStep(q *plan, inputs map[[2]int]*hlo.Value, seeds map[int]*pjrt.Buffer, args []dispatch.Arg, outs []OutTensor) (bind []stepArg, vals, donates []*hlo.Value, ok bool) {
	for _, src := range q.sources {
		switch src.kind {
		case srcArg:
			v := inputs[[2]int{src.arg, src.idx}]
			if v == nil {
				return nil, nil, nil, false
			}
			bind = append(bind, stepArg{v: v})
		case srcScalar:
			b := e.scalarBuffer(src.scalar)
			if g := e.d.g; g.paramOf[b] == nil { // kept alive until the graph has run, as its parameters are
				if g.stepBufs == nil {
					g.stepBufs = map[*pjrt.Buffer]bool{}
				}
				g.stepBufs[b] = true
			}
			bind = append(bind, stepArg{b: b})
		case srcSeed:
			b := seeds[src.arg]
			if b == nil {
				return nil, nil, nil, false
			}
			bind = append(bind, stepArg{b: b})
		case srcUpload: // this call's upload, retired with the graph
			bind = append(bind, stepArg{b: src.buf})
		default:
			return nil, nil, nil, false
		}
	}
	for _, w := range q.writes {
		s := e.writeTarget(args, outs, w)
		if v := inputs[[2]int{w.arg, w.idx}]; w.result < 0 && v != nil {
			donates = append(donates, v)
		}
		if s == nil || s.pending == nil {
			return nil, nil, nil, false
		}
		vals = append(vals, s.pending)
	}
	return bind, vals, donates, true
}

// endColdRun launches the device's cold run, if any, before something other
// than an op records into its graph (a host write or read of part of a
// storage, a storage copy), which no step would compute.
func (e *Engine) endColdRun() error {
	if !e.inColdRun() {
		return nil
	}
	why := e.why
	e.why = whyColdCut
	err := e.flush()
	e.why = why // the caller's own flush keeps its reason
	return err
}

// readsGrown reports whether an argument of an op is a padded storage or an
// append's result, which an append may pad (pad.go): no plan covers the op.
func (e *Engine) readsGrown(args []dispatch.Arg) bool {
	for _, a := range args {
		for _, h := range a.Handles {
			if t := h.(*TensorDesc); !t.CPU && t.Addr != 0 {
				if st := e.storages[t.Addr]; st != nil && (st.pad != nil || st.grown != 0) {
					return true
				}
			}
		}
	}
	return false
}

// onlyAppends reports whether a rule's padded results are all appends at
// their own size (dispatch.Ctx.AppendedAt): plain values.
func onlyAppends(pads map[int]dispatch.PadResult) bool {
	for _, r := range pads {
		if !r.Plain {
			return false
		}
	}
	return true
}

// launchSteps launches cold run g op by op when it can (see above): it
// reports false, having launched nothing, when g must launch as one program.
// Each storage in dst takes the buffer of its value outs[i].
func (e *Engine) launchSteps(g *graph, outs []*hlo.Value, dst []*Storage) (bool, error) {
	r := g.cold
	if r == nil || !r.stepwise || len(r.steps) != g.ops || len(g.extra) > 0 {
		return false, nil
	}
	plain, ok := stepsHold(g, r.steps, outs)
	if !ok {
		return false, nil
	}
	progs, ok := e.stepPrograms(r, plain)
	if !ok {
		return false, nil
	}
	made := map[*hlo.Value]*pjrt.Buffer{}
	for b, v := range g.paramOf {
		made[v] = b
	}
	// A value only steps read (want 0) goes once its last reader has run, as its
	// storage would op by op. An output two storages hold, remade by a step that
	// read it (an op whose result is its argument's value), keeps its earlier
	// buffers for the others.
	want := map[*hlo.Value]int{}
	for _, v := range outs {
		want[v]++
	}
	lastUse := map[*hlo.Value]int{}
	for i, st := range r.steps {
		for _, a := range st.args {
			if a.v != nil {
				lastUse[a.v] = i
			}
		}
	}
	temp := map[*hlo.Value]bool{}     // made by a step, not yet released
	stepMade := map[*hlo.Value]bool{} // made by a step (not a parameter)
	spare := map[*hlo.Value][]*pjrt.Buffer{}
	var last *pjrt.Event
	for i, st := range r.steps {
		bufs := make([]*pjrt.Buffer, len(progs[i].used))
		for k, p := range progs[i].used {
			if a := st.args[p]; a.b != nil {
				bufs[k] = a.b
			} else {
				bufs[k] = made[a.v]
			}
		}
		var done []*pjrt.Buffer
		l := launch{key: st.key, ops: 1, device: e.dev.cur, donated: progs[i].donated}
		ev, err := e.execute(l, progs[i].run(), bufs, func(rs []*pjrt.Buffer) []*pjrt.Buffer {
			for k, v := range st.outs {
				switch { // an op that returns a value it read: its earlier buffer serves another storage, or goes
				case stepMade[v] && want[v] > 1:
					spare[v], want[v] = append(spare[v], made[v]), want[v]-1
				case stepMade[v] && want[v] > 0, temp[v]:
					done = append(done, made[v])
				}
				made[v], temp[v], stepMade[v] = rs[k], want[v] == 0, true
			}
			for _, a := range st.args {
				if a.v != nil && temp[a.v] && lastUse[a.v] == i {
					done, temp[a.v] = append(done, made[a.v]), false
				}
			}
			for _, v := range st.outs {
				if temp[v] && lastUse[v] <= i {
					done, temp[v] = append(done, made[v]), false
				}
			}
			return done
		})
		if err != nil {
			return true, fmt.Errorf("torchtpu: executing op %d of a run of %d ops: %w", i+1, len(r.steps), err)
		}
		last = ev
	}
	replaced := make([]*pjrt.Buffer, 0, len(dst))
	given := map[*hlo.Value]bool{}
	for i, st := range dst {
		replaced = append(replaced, st.buf)
		if v := outs[i]; given[v] {
			st.buf, spare[v] = spare[v][0], spare[v][1:]
		} else {
			st.buf, given[v] = made[v], true
		}
	}
	for v, live := range temp {
		if live {
			replaced = append(replaced, made[v])
		}
	}
	e.track(last, replaced)
	e.m.ColdRunSteps += int64(len(r.steps))
	return true, nil
}

// stepPrograms returns the program of each of r's steps, once compiled: this
// thread compiles, from the back of the queue, the jobs no worker has
// started (the workers take them from the front) and waits for the rest. A
// step marked plain gets its program donating nothing, and that program's
// bindings. ok is false when a program cannot be had: the run is then one
// program, whose compile reports the error.
func (e *Engine) stepPrograms(r *coldRun, plain []bool) (progs []*program, ok bool) {
	for i := len(r.steps) - 1; i >= 0; i-- {
		if j := e.inflight(r.steps[i].key); j != nil && e.takeBack(j.skey) && e.compileJob(j, false) != nil {
			return nil, false
		}
	}
	progs = make([]*program, len(r.steps))
	for i, st := range r.steps {
		if plain[i] { // a value it would take over is still needed
			k, err := st.plain()
			if err != nil {
				return nil, false
			}
			st.key, st.args, st.outs = k, st.plainArgs, st.plainOuts
			r.steps[i] = st
		}
		if e.awaitProgram(st.key) != nil {
			return nil, false
		}
		x, found := e.cache.Get(st.key)
		if !found {
			return nil, false
		}
		progs[i] = x.(*program)
	}
	return progs, true
}

// stepsHold reports whether steps can compute outs op by op from g's
// parameters: every value a step reads is a parameter or a value an earlier
// step made, and every output is made by steps as many times as storages hold
// it (an op whose result is the value it read makes a buffer anew). A step that
// would donate a value read after it, or an output, must launch its program
// donating nothing: plain reports those steps; ok is false when such a step
// has no such program.
func stepsHold(g *graph, steps []runStep, outs []*hlo.Value) (plain []bool, ok bool) {
	held := map[*hlo.Value]int{} // the storages holding each output
	for _, v := range outs {
		held[v]++
	}
	lastUse := map[*hlo.Value]int{}
	for i, st := range steps {
		for _, a := range st.args {
			if a.v != nil {
				lastUse[a.v] = i
			}
		}
	}
	have := map[*hlo.Value]bool{}
	for _, v := range g.paramOf {
		have[v] = true
	}
	made := map[*hlo.Value]int{}
	plain = make([]bool, len(steps))
	for i, st := range steps {
		for _, a := range st.args {
			if a.v != nil && !have[a.v] {
				return nil, false
			}
		}
		for _, v := range st.donates {
			if held[v] > 0 || lastUse[v] > i {
				if st.plain == nil {
					return nil, false
				}
				plain[i] = true
			}
		}
		for _, v := range st.outs {
			have[v] = true
			made[v]++
		}
	}
	for v, n := range held {
		if made[v] < n {
			return nil, false
		}
	}
	return plain, true
}
