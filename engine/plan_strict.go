package engine

import (
	"slices"

	"torchtpu/dispatch"
	"torchtpu/pjrt"
)

// The strict fast path. In strict mode every op is a program of its own; a
// plan (plan.go) launches that program directly: which argument storage or
// cached number feeds each parameter, and which storage each result goes to.
// No builder records and no text is printed. An op on a growing tensor is
// planned too: a padded argument binds its buffer as it is (its capacity is a
// part of the signature, its size a number the plan feeds), and a new result
// the rule held padded, or marked as an append, is held so again.

// makeStrictPlan learns how the op just lowered into the device's graph
// (before its flush) maps onto its arguments, or returns nil when it cannot
// be replayed. Its key is set once the flush has named the program.
func (e *Engine) makeStrictPlan(m *planMark, args []dispatch.Arg, outs []OutTensor) *plan {
	g := e.d.g
	if e.m.Executions != m.execs || len(g.extra) > 0 {
		return nil // the rule read data to the host
	}
	byBuf := map[*pjrt.Buffer]source{}
	for i, a := range args {
		for j, h := range a.Handles {
			t := h.(*TensorDesc)
			if t.CPU || t.Addr == 0 {
				continue
			}
			if st := e.storages[t.Addr]; st != nil && st.buf != nil {
				if _, seen := byBuf[st.buf]; !seen {
					byBuf[st.buf] = source{kind: srcArg, arg: i, idx: j}
				}
			}
		}
	}
	p := &plan{}
	for _, b := range g.params {
		if src, ok := byBuf[b]; ok {
			p.sources = append(p.sources, src)
			continue
		}
		src, ok := e.scalarSource(b)
		if !ok {
			return nil
		}
		p.seeded = p.seeded || src.kind == srcSeed
		p.sources = append(p.sources, src)
	}
	var results map[uint64]int
	p.results, results = resultShapes(outs)
	byAddr := argPositions(args)
	for _, st := range g.pending {
		if st.pending == nil {
			continue
		}
		if r, ok := results[st.addr]; ok {
			w := planWrite{result: r, grown: st.grown}
			if st.pad != nil {
				pad := *st.pad
				w.pad = &pad
			}
			p.writes = append(p.writes, w)
			continue
		}
		ai, ok := byAddr[st.addr]
		if !ok || st.pad != nil || st.grown != 0 {
			return nil // an argument left padded or marked as an append: not replayed
		}
		// A new storage (copy_ into torch.empty) takes its dtype and shape from its first write.
		p.writes = append(p.writes, planWrite{result: -1, arg: ai[0], idx: ai[1], dtype: st.dtype, shape: slices.Clone(st.shape)})
	}
	return p
}

// argParams gives each argument storage holding a buffer its parameter of
// the empty graph before the rule of an op that runs alone (strict and debug
// mode) runs, in argument order, as a fused or cold-run op's inputs come
// before the numbers its rule adds (markFused, soloPlan). So an op's one-op
// program has one parameter order whichever path made it: a strict op whose
// numbers are new finds the program a cold run compiled for it, and debug
// and strict mode share programs.
func (e *Engine) argParams(args []dispatch.Arg) {
	for _, st := range e.argStorages(args) {
		if st != nil && st.pad == nil && storageState(st) == stateBuffer { // a padded buffer is read its own way
			e.d.g.param(st.buf, storedType(st.dtype, st.shape))
		}
	}
}

// replayStrict runs plan p on args: it binds the parameters, allocates the
// new results and launches the cached program. It reports ok=false when the
// program has left the cache (the caller then takes the full path).
func (e *Engine) replayStrict(p *plan, args []dispatch.Arg) (outs []OutTensor, ok bool, err error) {
	if e.awaitProgram(p.key) != nil {
		return nil, false, nil // the full path compiles it again and reports the error at the op
	}
	x, found := e.cache.Get(p.key)
	if !found {
		return nil, false, nil
	}
	prog := x.(*program)
	bufs := make([]*pjrt.Buffer, len(prog.used))
	var seeds []*pjrt.Buffer
	defer func() {
		for _, b := range seeds {
			b.Destroy() // after the launch: the plugin holds a buffer a launch reads
		}
	}()
	for i, pi := range prog.used {
		switch src := p.sources[pi]; src.kind {
		case srcScalar:
			bufs[i] = e.scalarBuffer(src.scalar)
		case srcSeed:
			bufs[i] = e.seedBuffer(args, src.arg)
			seeds = append(seeds, bufs[i])
		default:
			bufs[i] = e.argStorage(args, src.arg, src.idx).buf
		}
	}
	sts, outs, err := e.newResults(p.results)
	if err != nil {
		return nil, true, err
	}
	l := launch{key: p.key, ops: 1, device: e.dev.cur, donated: prog.donated}
	_, err = e.execute(l, prog.run(), bufs, func(results []*pjrt.Buffer) []*pjrt.Buffer {
		var replaced []*pjrt.Buffer
		for i, w := range p.writes {
			st := e.writtenStorage(sts, args, w)
			replaced = append(replaced, st.buf)
			st.buf, st.known = results[i], p.rangeOf(i)
			switch {
			case w.result < 0: // a write leaves its storage plain, as Engine.write does
				st.pad, st.grown = nil, 0
				if !st.shaped {
					st.shaped, st.dtype, st.shape = true, w.dtype, slices.Clone(w.shape)
				}
			case w.pad != nil || w.grown != 0: // a growing tensor's next size, held as the first call's
				st.grown = w.grown
				if w.pad != nil {
					pad := *w.pad
					st.pad = &pad
				}
				e.padSeen = true
			}
		}
		return replaced
	})
	if err != nil {
		for _, st := range sts {
			e.freeStorage(st)
		}
		return nil, true, err
	}
	e.m.CacheHits++
	e.m.FastPathHits++
	e.m.OpsRecorded++
	return outs, true, nil
}
