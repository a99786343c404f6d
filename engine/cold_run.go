package engine

import (
	"encoding/hex"
	"slices"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// Cold runs. Strict mode runs every op as a program of its own, so a first
// step would compile each new op's program before the next op could run.
// Instead, an op whose program is in no tier (a cold op) stays pending: the
// ops after it record into the same graph, as fused mode records, until a
// place where fused mode would flush (a sync point, a step mark, a backward
// boundary, the size cap) or an op that cannot be planned. Each op of the run
// gets its one-op program (for planned ops made from the fragment the plan
// cut, soloPlan) and a strict plan under the signature it will have once its
// inputs hold buffers; the compile pool (compile_pool.go) compiles the
// programs on every core while the run records. The flush that ends the run
// launches its ops one by one on those programs (cold_run_steps.go), and the
// next calls of its ops replay their strict plans. So a step computes the
// same values whether its ops were cold, loaded from disk or compiled in an
// earlier process, and whatever the pool's timing.

// coldRun is one cold run: the step each of its ops noted.
type coldRun struct {
	steps    []runStep
	stepwise bool // every op so far noted its step
}

// coldMark is what planning an op of a cold run keeps from before its rule:
// its strict signature to be and its argument storages' dtypes and shapes.
type coldMark struct {
	sig    hlo.Hash
	ok     bool
	before map[uint64]storageShape
}

type storageShape struct {
	dtype dispatch.DType
	shape []int64
}

// SetColdRuns turns cold runs on or off (TORCHTPU_COLD_RUNS sets the
// start) and returns whether they were on. Turning them off launches a
// pending run; programs already handed to the pool still compile.
func (e *Engine) SetColdRuns(on bool) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	was := !e.noColdRuns
	if was && !on && e.client != nil {
		e.why = whyModeSwitch
		if err := e.flushAll(); err != nil {
			return was, err
		}
	}
	e.noColdRuns = !on
	return was, nil
}

// coldRunsOn reports whether a cold op in strict mode may start a cold run.
func (e *Engine) coldRunsOn() bool {
	return e.mode == ModeStrict && !e.noColdRuns && !e.capturing() && (e.cp == nil || !e.cp.stopped)
}

// inColdRun reports whether the device's graph is a cold run.
func (e *Engine) inColdRun() bool {
	return e.mode == ModeStrict && e.d.g.cold != nil
}

// cutColdRun launches the cold run before an op that must run on a graph of
// its own in strict mode (it cannot be planned, or it reads data).
func (e *Engine) cutColdRun(r *dispatch.Rule) error {
	if !e.inColdRun() || r.Needs.Plannable() && len(r.Needs.HostArgs) == 0 {
		return nil
	}
	e.why = whyColdCut
	return e.flush()
}

// startColdRun decides, after a strict op recorded into an empty graph,
// whether it is cold: its program is in neither the in-memory tier nor the
// pool. A cold op's module goes to the pool, which loads its program from a
// persistent tier or compiles it, and the graph stays pending as a cold run
// whose first step is the op; the caller then does not flush.
func (e *Engine) startColdRun() bool {
	g := e.d.g
	if !e.coldRunsOn() || g.ops != 1 || len(g.extra) > 0 {
		return false
	}
	var outs []*hlo.Value
	var dst []*Storage
	for _, st := range g.pending {
		if st.pending != nil {
			outs, dst = append(outs, st.pending), append(dst, st)
		}
	}
	if len(outs) == 0 {
		return false
	}
	aliases := e.donations(g, dst, outs)
	skey := structuralKey(g.b.Key(outs, aliases))
	if _, ok := e.cache.Peek(skey); ok {
		return false
	}
	if e.compiling(skey) { // the flush waits for it, or takes it back
		return false
	}
	text, used := g.b.ModuleAliased(outs, aliases)
	sum := g.b.Summarize(outs)
	e.fl = flushCtx{reason: whyEagerOp, ops: 1, first: g.first}
	first := runStep{key: skey, outs: outs}
	for _, b := range g.params {
		first.args = append(first.args, stepArg{b: b})
	}
	for k := range aliases {
		first.donates = append(first.donates, g.paramOf[g.params[k]])
	}
	g.cold = &coldRun{steps: []runStep{first}, stepwise: true}
	e.submit(skey, text, used, len(aliases), sum, e.fl) // loaded or compiled by the pool
	e.m.ColdRuns++
	e.lastProg = skey
	return true
}

// markCold notes, for an op about to record into a cold run, its strict
// signature to be and the dtypes and shapes of its argument storages.
func (e *Engine) markCold(m *planMark, op string, args []dispatch.Arg) {
	c := &coldMark{before: map[uint64]storageShape{}}
	c.sig, c.ok = e.signature(op, args, sigSolo)
	for _, a := range args {
		for _, h := range a.Handles {
			t := h.(*TensorDesc)
			if st := e.storages[t.Addr]; st != nil && !t.CPU && st.shaped {
				c.before[t.Addr] = storageShape{st.dtype, st.shape}
			}
		}
	}
	m.cold = c
}

// soloPlan gives the op of a cold run planned by fused plan p its one-op
// program and strict plan, unless its strict signature has a plan already:
// a module with a parameter per input and parameter of p's fragment, the
// fragment pasted on them, and the values of p's writes as results. A write
// into an argument storage it read donates that storage's buffer, as a strict
// flush would. The pool loads the program from a persistent tier or compiles it.
// It returns the op's strict plan, or nil when it has none; a plan for an op
// without a strict signature (an argument storage without a value), or that
// uploads values of its own, gives a storage its first value or a new type or
// is not replayable (an append), which a strict replay cannot, only names the
// op's program for its run's step. plain, when the program donates, returns
// the key of the same program donating nothing, compiling it first.
func (e *Engine) soloPlan(op string, m *planMark, args []dispatch.Arg, p *plan, replayable bool) (solo *plan, plain func() (string, error)) {
	c := m.cold
	if c == nil || p == nil || p.frag == nil {
		return nil, nil
	}
	reusable := replayable && c.ok && !p.uploads // a strict replay uploads nothing, and gives no storage its first value or a new type
	written := map[uint64]bool{}
	for _, w := range p.writes {
		if w.result >= 0 {
			continue
		}
		t := args[w.arg].Handles[w.idx].(*TensorDesc)
		if written[t.Addr] {
			return nil, nil // two values for one storage
		}
		written[t.Addr] = true
		b, ok := c.before[t.Addr]
		reusable = reusable && ok && b.dtype == w.dtype && slices.Equal(b.shape, w.shape)
	}
	b := hlo.NewBuilder()
	var inputs, params []*hlo.Value
	for _, t := range p.frag.Inputs() {
		inputs = append(inputs, b.Param(t))
	}
	for _, t := range p.frag.Params() {
		params = append(params, b.Param(t))
	}
	outs, ok := b.Paste(p.frag, inputs, params, p.refs)
	if !ok {
		return nil, nil
	}
	aliases := map[int]int{}
	for i, w := range p.writes {
		if w.result >= 0 || e.noDonate {
			continue
		}
		for k, src := range p.sources[:len(inputs)] {
			if src.arg == w.arg && src.idx == w.idx && inputs[k].T.Equal(outs[i].T) && outs[i] != inputs[k] {
				aliases[k] = i
			}
		}
	}
	fl := flushCtx{reason: whyEagerOp, ops: 1, first: []string{op}}
	if len(aliases) > 0 {
		plain = func() (string, error) {
			k := structuralKey(b.Key(outs, nil))
			if e.awaitProgram(k) == nil {
				if _, ok := e.cache.Peek(k); ok {
					return k, nil
				}
			}
			text, used := b.ModuleAliased(outs, nil)
			saved := e.fl
			e.fl = fl
			defer func() { e.fl = saved }()
			exe, err := e.compileWith(text, e.optionsFor(b.Summarize(outs)), b.Summarize(outs))
			if err != nil {
				return "", err
			}
			e.cache.Put(k, &program{exe: exe, used: used})
			return k, nil
		}
	}
	if known, ok := e.d.plans.get(c.sig); ok && reusable {
		return known, plain
	}
	skey := structuralKey(b.Key(outs, aliases))
	solo = &plan{sources: p.sources, writes: p.writes, results: p.results, key: skey, ranges: p.ranges}
	if reusable {
		e.d.plans.put(c.sig, solo)
	}
	if _, ok := e.cache.Peek(skey); ok || e.compiling(skey) {
		return solo, plain
	}
	text, used := b.ModuleAliased(outs, aliases)
	sum := b.Summarize(outs)
	e.submit(skey, text, used, len(aliases), sum, fl)
	return solo, plain
}

// structuralKey names a program in the in-memory tier by its structural hash.
func structuralKey(h hlo.Hash) string {
	var raw [16]byte
	for i := 0; i < 8; i++ {
		raw[i], raw[8+i] = byte(h.Lo>>(8*i)), byte(h.Hi>>(8*i))
	}
	return "s:" + hex.EncodeToString(raw[:])
}
