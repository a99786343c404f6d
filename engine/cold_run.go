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
// boundary, the size cap) or an op that cannot be planned. The run then
// launches as one program. The cold op, and each op of the run that the
// fused fast path can plan, also gets its one-op program (for planned ops
// made from the fragment the plan cut, soloPlan) and a strict plan under the
// signature it will have once its inputs hold buffers. The compile pool
// (compile_pool.go) holds those programs until the run records again, so
// that ops run once compile only their run, and the first step's compiles
// have the cores to themselves; it compiles them in the background while that
// second call launches the run's cached program. From the third call on the
// run's ops run one by one, waiting for any program still compiling.
//
// Which program a call runs depends on how many times its run was called,
// never on how far the pool has got or on what a persistent tier holds (an
// op is cold when the in-memory tier and the pool lack its program): a
// process with a warm disk cache records the same runs, loading their
// programs, and two processes or two ranks compute the same values. A run's
// values may differ from its ops' one by one in the last bit, always alike:
// XLA fuses a run's loops across ops and contracts a multiply and an add of
// two ops into one fused multiply-add, and no option of the plugin stops it
// (an optimization barrier does not; disabling fusion made strict steps
// 2.5 times slower).
// Cold runs are opt-in (TORCHTPU_COLD_RUNS=1, torch.tpu.set_cold_runs): on
// a machine with few cores the pool's compiles overlap little else, so a
// run's own compile adds to its ops' and the first steps together take
// longer than op by op (bench/results/first_step.md), the first alone less.

// coldRun is one cold run: the keys of the one-op programs handed to the
// pool while it recorded. Its first op's strict plan keeps it until the
// run's third call: the second call of that op records the same run again
// (rerun) and launches the run's program, which the in-memory tier holds;
// the third waits for the programs (rerunFor).
type coldRun struct {
	keys     []string
	repeated bool // the run has recorded a second time
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
// pool. A cold op's program is loaded from a persistent tier or its module
// goes to the pool, and the graph stays pending as a cold run; the caller
// then does not flush.
func (e *Engine) startColdRun() bool {
	g := e.d.g
	rerun := e.rerun
	e.rerun = nil
	if !e.coldRunsOn() || g.ops != 1 || len(g.extra) > 0 {
		return false
	}
	if rerun != nil {
		g.cold = rerun
		e.m.ColdRuns++
		return true
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
	g.cold = &coldRun{}
	if exe := e.loadProgram(e.fullKey(text, e.optionsFor(sum)), sum); exe != nil {
		e.cache.Put(skey, &program{exe: exe, used: used, donated: len(aliases)}) // the run starts all the same
	} else {
		e.submit(skey, text, used, len(aliases), sum, e.fl)
	}
	e.m.ColdRuns++
	e.lastProg = skey
	return true
}

// rerunFor reports whether strict plan p, about to be replayed on an empty
// graph, should instead record its cold run again; it then notes the run
// for startColdRun. A run records twice, its first call and the next, and
// its one-op programs are released to the pool at the second; from the third
// call on its ops run one by one, waiting here for any program still
// compiling. The count of calls, never how far the pool has got, decides
// which program runs, so a step's values do not depend on compile timing.
func (e *Engine) rerunFor(p *plan) bool {
	if p == nil || p.run == nil || !e.coldRunsOn() {
		return false
	}
	r := p.run
	e.releaseJobs(r.keys)
	if !r.repeated {
		r.repeated = true
		e.rerun = r
		return true
	}
	p.run = nil
	for _, k := range r.keys {
		e.awaitProgram(k) // a failed compile is the op's to report, on its full path
	}
	return false
}

// add adds key to the programs r waits for.
func (r *coldRun) add(key string) {
	if !slices.Contains(r.keys, key) {
		r.keys = append(r.keys, key)
	}
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
// flush would. The program is compiled by the pool unless a tier holds it.
func (e *Engine) soloPlan(op string, m *planMark, args []dispatch.Arg, p *plan) {
	c := m.cold
	if c == nil || !c.ok || p == nil || p.uploads || p.frag == nil {
		return
	}
	if known, ok := e.d.plans[c.sig]; ok {
		if known != nil && e.compiling(known.key) {
			e.d.g.cold.add(known.key)
		}
		return
	}
	written := map[uint64]bool{}
	for _, w := range p.writes {
		if w.result >= 0 {
			continue
		}
		t := args[w.arg].Handles[w.idx].(*TensorDesc)
		b, ok := c.before[t.Addr]
		if !ok || written[t.Addr] || b.dtype != w.dtype || !slices.Equal(b.shape, w.shape) {
			return // the op gives a storage its first value, a new type, or two values
		}
		written[t.Addr] = true
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
		return
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
	skey := structuralKey(b.Key(outs, aliases))
	solo := &plan{sources: p.sources, writes: p.writes, results: p.results, key: skey}
	e.d.plans.put(c.sig, solo)
	if _, ok := e.cache.Peek(skey); ok || e.compiling(skey) {
		return
	}
	text, used := b.ModuleAliased(outs, aliases)
	sum := b.Summarize(outs)
	fl := flushCtx{reason: whyEagerOp, ops: 1, first: []string{op}}
	saved := e.fl
	e.fl = fl
	defer func() { e.fl = saved }()
	if exe := e.loadProgram(e.fullKey(text, e.optionsFor(sum)), sum); exe != nil {
		e.cache.Put(skey, &program{exe: exe, used: used, donated: len(aliases)})
		return
	}
	e.submit(skey, text, used, len(aliases), sum, fl)
}

// structuralKey names a program in the in-memory tier by its structural hash.
func structuralKey(h hlo.Hash) string {
	var raw [16]byte
	for i := 0; i < 8; i++ {
		raw[i], raw[8+i] = byte(h.Lo>>(8*i)), byte(h.Hi>>(8*i))
	}
	return "s:" + hex.EncodeToString(raw[:])
}
