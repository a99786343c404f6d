package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// HasRule reports whether op has a rule in the table.
func (e *Engine) HasRule(op string) bool {
	_, ok := dispatch.Lookup(op)
	return ok
}

// OpOn runs op on args: the rule checks the arguments now (bad input fails
// here, in every mode), records its lowering into the pending graph, and the
// mode's policy decides when the graph runs. Results that belong to mutated
// arguments (in-place and out=) are written there; the others come back as
// new storages. The op runs on its tensors' device; an op without tpu
// tensors runs on device (the current device when device is -1).
//
// An op goes through four steps: prepare (the device, the dtypes), replay (a
// plan learned from an earlier call with the same signature, plan.go), lower
// (the rule, its results placed), learn (a plan from what the rule
// recorded); recorded then applies the mode's flush policy. In fused mode a
// step tape comes first: an op that matches the tape of an earlier segment
// is replayed without any of the four (step_replay.go), and every other op
// is noted on the segment's own tape (step_tape.go).
func (e *Engine) OpOn(op string, device int, args []dispatch.Arg) (outs []OutTensor, err error) {
	return e.opOn(op, device, args, nil)
}

func (e *Engine) opOn(op string, device int, args []dispatch.Arg, layouts [][]int64) (outs []OutTensor, err error) {
	e.mu.Lock()
	t0 := time.Now()
	entry, err := e.accept(op, args)
	if err != nil {
		e.m.OpSeconds += time.Since(t0).Seconds()
		e.mu.Unlock()
		return nil, err
	}
	e.layouts = layouts
	e.opSerial++
	defer e.opDone(t0, op, args, &outs, &err)
	return e.runOp(op, entry, device, args)
}

// accept returns op's entry, or ErrNoRule when no rule of the table runs it
// for args (the call then goes to CPU).
func (e *Engine) accept(op string, args []dispatch.Arg) (dispatch.Entry, error) {
	if err := e.ready(); err != nil {
		return dispatch.Entry{}, err
	}
	entry, ok := dispatch.Lookup(op)
	if !ok || !dispatch.AcceptsComplexScalars(entry.Rule, args) || !dispatch.AcceptsComplexHalf(op, args) ||
		!dispatch.AcceptsFloat8(op, args) {
		return dispatch.Entry{}, ErrNoRule
	}
	return entry, nil
}

// opDone ends an op that opOn started, in the order its steps need: the
// state an op holds while it runs is reset, a panic of the rule becomes its
// error (opFailed) and a failed op leaves the segment's tape
// (offTapeOnError). It is opOn's one deferred call.
func (e *Engine) opDone(t0 time.Time, op string, args []dispatch.Arg, outs *[]OutTensor, err *error) {
	defer e.mu.Unlock()
	e.fusedLog, e.hostVals, e.sigSeed = nil, nil, 0
	e.opSerial++
	if r := recover(); r != nil {
		if perr, ok := r.(dispatch.PromotionError); ok {
			*err = perr
		} else {
			*err = fmt.Errorf("%v", r)
		}
	}
	e.opFailed(op, args, outs, err)
	e.offTapeOnError(err)
	e.trimScalars()
	e.layouts = nil
	e.m.OpSeconds += time.Since(t0).Seconds()
}

// runOp is opOn's work on an op the table accepts, under the engine's lock.
func (e *Engine) runOp(op string, entry dispatch.Entry, device int, args []dispatch.Arg) (outs []OutTensor, err error) {
	if err := e.prepare(args, device); err != nil {
		return nil, err
	}
	if entry.Variant == dispatch.Inplace {
		if err := checkSelfOverlap(entry.Rule, args); err != nil {
			return nil, err
		}
	}
	e.harvest()
	e.opSeeds = e.opSeeds[:0]
	if entry.Rule.Needs.Seeded { // the seed is left out of the op's signature and tape key (opDone resets it)
		e.sigSeed = entry.Rule.Needs.SeedArg + 1
	}
	if err := e.cutColdRun(entry.Rule); err != nil {
		return nil, err
	}
	s := e.stepSegment()
	if s != nil {
		var done bool
		if s, outs, done, err = e.stepOp(s, op, entry, args); done {
			return outs, err
		}
	}
	n0 := len(e.d.g.params)
	m := e.startPlan(op, entry.Rule, args)
	if e.inColdRun() && (m.mode == planNone || e.readsGrown(args)) { // an op no step can cover runs after the run
		if err := e.endColdRun(); err != nil {
			return nil, err
		}
		m = e.startPlan(op, entry.Rule, args)
	}
	if m.mode != planNone {
		if outs, p, ok, err := e.replay(m, args); ok {
			if err == nil && m.mode == planFused {
				sp, plain := e.soloPlan(op, m, args, p, true)
				e.noteStep(sp, plain, m, p, args, outs)
				if s != nil {
					e.noteTapeOp(s, p, args, outs, n0)
				}
				err = e.recorded(op)
			}
			return outs, err
		}
	}
	reads := e.hostArgsToRead(entry.Rule, args)
	if len(reads) > 0 || entry.Rule.Needs.Results {
		m.mode = planNone
		if err := e.beforeRule(entry.Rule, reads); err != nil {
			return nil, err
		}
	}
	// A rule that draws random numbers or uploads values is never planned, but a step tape
	// holds its fragment and runs the rule again for each replay's new values.
	tapeOnly := s != nil && s.rec != nil && m.mode == planNone && len(reads) == 0 && !entry.Rule.Needs.Results
	if (m.mode == planFused || tapeOnly) && !e.markFused(m, args) {
		m.mode, tapeOnly = planNone, false
	}
	if g := e.d.g; e.mode != ModeFused && g.ops == 0 && len(g.params) == 0 && len(g.pending) == 0 {
		e.argParams(args) // an op of its own (strict, debug): its one-op program's parameter order
	}
	outs, c, err := e.lower(op, entry, args)
	if err != nil {
		return nil, err
	}
	var p *plan
	// A fused replay would not keep padding (a strict one does); an append at its own size is still a cold run's
	// step, left unplanned rather than unplannable, so that a later run notes its step again.
	padded := len(c.Pads) > 0
	coldAppend := padded && onlyAppends(c.Pads) && e.inColdRun()
	if (m.mode != planNone || tapeOnly) && (!padded || m.mode == planStrict || coldAppend) {
		p = e.learn(m, args, outs)
		if p != nil && len(c.Ranges) > 0 {
			e.noteRanges(p, args, outs)
		}
		if m.mode == planFused {
			sp, plain := e.soloPlan(op, m, args, p, !padded)
			e.noteStep(sp, plain, m, p, args, outs)
		}
		if padded && m.mode != planStrict {
			p = nil
		}
	}
	if s != nil {
		e.noteTapeOp(s, p, args, outs, n0)
	}
	if err := e.recorded(op); err != nil {
		return nil, err
	}
	if !coldAppend {
		e.keepPlan(m, p)
	}
	return outs, nil
}

// opFailed sends an op without a usable rule to the CPU (ErrNoRule), and
// adds the op and its arguments to any other error.
func (e *Engine) opFailed(op string, args []dispatch.Arg, outs *[]OutTensor, err *error) {
	if errors.Is(*err, dispatch.ErrRunOnCPU) {
		*outs, *err = nil, ErrNoRule
		return
	}
	if *err != nil {
		var nan *NaNError
		if _, resize := (*err).(*ResizeError); !resize && !errors.As(*err, &nan) {
			*err = &opError{op: op, args: describe(args), err: *err}
		}
	}
}

// prepare selects the device the op runs on and checks that the device can
// hold its tensors' dtypes.
func (e *Engine) prepare(args []dispatch.Arg, device int) error {
	dev, err := e.argsDevice(args, device)
	if err != nil {
		return err
	}
	if err := e.useDevice(dev); err != nil {
		return err
	}
	return checkDTypes(args)
}

// startPlan decides whether the op may be planned, and computes its signature.
func (e *Engine) startPlan(op string, r *dispatch.Rule, args []dispatch.Arg) *planMark {
	m := &planMark{mode: e.planFor(r), g: e.d.g, execs: e.m.Executions, extra: len(e.d.g.extra)}
	if m.mode == planNone {
		return m
	}
	sig, ok := e.opSignature(op, args, m.mode == planFused)
	if !ok {
		m.mode = planNone
	}
	m.sig = sig
	if m.mode == planFused && e.inColdRun() {
		e.markCold(m, op, args)
	}
	return m
}

// replay runs the plan p known for m's signature, if any. ok is false when the
// op must take the full path: no plan yet, or the plan no longer applies
// (it is then dropped). A signature known to be unplannable stops planning.
// In fused mode the caller then applies the flush policy (recorded).
func (e *Engine) replay(m *planMark, args []dispatch.Arg) (outs []OutTensor, p *plan, ok bool, err error) {
	p, known := e.d.plans.get(m.sig)
	switch {
	case known && p == nil:
		m.mode = planNone
		return nil, nil, false, nil
	case !known:
		return nil, nil, false, nil
	case m.mode == planStrict:
		outs, ok, err = e.replayStrict(p, args)
	default:
		outs, p, ok, err = e.replayFused(p, args, m)
	}
	if !ok {
		e.d.plans.drop(m.sig)
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, true, err
	}
	return outs, p, true, nil
}

// lower runs the op's rule and places its results: new storages for a
// functional op, the mutated arguments for in-place and out= ops, and the
// rule's own writes.
func (e *Engine) lower(op string, entry dispatch.Entry, args []dispatch.Arg) ([]OutTensor, *dispatch.Ctx, error) {
	c := &dispatch.Ctx{Op: op, B: e.d.g.b, Args: args, R: e, NoHostChecks: e.capturing()}
	e.cur, e.curOp = c, op
	defer func() { e.cur, e.padReads = nil, nil }()
	results, pad, err := e.lowerRule(c, entry)
	if err != nil {
		return nil, nil, err
	}
	if pad != nil && pad.copyTo != nil {
		e.holdPadded(pad.copyTo, results[0], args[0].Tensors[0].DType, pad.dim, pad.n)
		e.keepRanges(c, entry.Variant, args, nil, len(results))
		return nil, c, nil
	}
	var outs []OutTensor
	switch entry.Variant {
	case dispatch.Functional:
		for k, r := range results {
			o, err := e.newOutput(c, r, k)
			if err != nil {
				return nil, nil, err
			}
			outs = append(outs, o)
		}
	case dispatch.Inplace:
		results = cutPadded(c, results)
		// self is a tensor, or a tensor list for the _foreach_ ops.
		for i, h := range args[0].Handles {
			if i >= len(results) {
				return nil, nil, fmt.Errorf("the rule gave %d results for %d tensors", len(results), len(args[0].Handles))
			}
			if err := e.writeResult(c, h.(*TensorDesc), results[i], "self"); err != nil {
				return nil, nil, err
			}
		}
	case dispatch.OutVariant:
		if e.padOut(c, results) {
			break
		}
		if err := e.writeOuts(c, entry.Rule, cutPadded(c, results)); err != nil {
			return nil, nil, err
		}
	}
	for _, w := range c.Writes {
		if err := e.writeResult(c, args[w.Arg].Handles[w.Index].(*TensorDesc), w.V, "argument"); err != nil {
			return nil, nil, err
		}
	}
	e.keepRanges(c, entry.Variant, args, outs, len(results))
	return outs, c, nil
}

// lowerRule runs the op's rule in c, on its padded arguments as held where
// the op computes on them so (pad_ops.go); pad is then not nil.
func (e *Engine) lowerRule(c *dispatch.Ctx, entry dispatch.Entry) ([]*hlo.Value, *padOp, error) {
	kind := dispatch.PadKindOf(c.Op)
	if dispatch.PadsVariant(kind, entry.Variant) {
		if p := e.planPadOp(kind, c.Args); p != nil {
			args := c.Args
			c.Args = p.args
			results, err := entry.Rule.Lower(c)
			c.Args, e.padReads = args, nil
			if err == nil && len(results) == 1 {
				if r, ok := e.finishPadOp(c, p, results[0]); ok {
					return []*hlo.Value{r}, p, nil
				}
			}
			// Not as expected: the rule runs again on the arguments at their sizes.
			c.Pads, c.Ranges, c.Writes = nil, nil, nil
		}
	}
	results, err := entry.Rule.Lower(c)
	if err == nil && kind == dispatch.PadSelect && entry.Variant == dispatch.Functional && !e.capturing() {
		e.keepAppend(c)
	}
	return results, nil, err
}

// writeOuts writes an out= op's results into its trailing out= arguments,
// or asks the caller to resize them (ResizeError) when their shapes differ.
func (e *Engine) writeOuts(c *dispatch.Ctx, r *dispatch.Rule, results []*hlo.Value) error {
	op, args, k := c.Op, c.Args, len(results)
	if len(args) < k {
		return fmt.Errorf("expected %d out= arguments", k)
	}
	dsts := args[len(args)-k:]
	c.OutArgs = k
	anyCast := make([]bool, k)
	for i, v := range results {
		var err error
		if anyCast[i], err = c.CheckOutDType(i, c.ResultDType(v), dsts[i].Tensors[0].DType); err != nil {
			return err
		}
	}
	if err := checkOutOverlap(r, args[:len(args)-k], dsts, results); err != nil {
		return err
	}
	var resize [][]int64
	for i, r0 := range results {
		d := dsts[i].Handles[0].(*TensorDesc)
		if r.OutKeepsShape && !slices.Equal(d.Sizes, r0.T.Shape) && numel(d.Sizes) == numel(r0.T.Shape) {
			results[i] = e.d.g.b.Reshape(r0, d.Sizes...)
		}
		if !slices.Equal(d.Sizes, results[i].T.Shape) {
			resize = append(resize, results[i].T.Shape)
		} else {
			resize = append(resize, d.Sizes)
		}
	}
	for i := range results {
		if !slices.Equal(resize[i], dsts[i].Tensors[0].Sizes) {
			modes := make([]int, len(resize))
			for j := range modes {
				modes[j] = dispatch.OutResizeMode(op, j)
			}
			return &ResizeError{Sizes: resize, Modes: modes}
		}
	}
	for i, v := range results {
		if err := e.writeResultAs(c, dsts[i].Handles[0].(*TensorDesc), v, "out", anyCast[i]); err != nil {
			return err
		}
	}
	return nil
}

// learn makes a plan from what the op's rule just recorded (before the flush
// policy runs), or returns nil when the op cannot be replayed.
func (e *Engine) learn(m *planMark, args []dispatch.Arg, outs []OutTensor) *plan {
	if m.mode == planStrict {
		return e.makeStrictPlan(m, args, outs)
	}
	e.fusedLog = nil
	return e.makeFusedPlan(m, args, outs)
}

// keepPlan stores what was learned under m's signature: in fused mode a plan
// or nil (the signature cannot be planned); in strict mode a plan, with the key
// of the program the flush launched.
func (e *Engine) keepPlan(m *planMark, p *plan) {
	switch m.mode {
	case planFused:
		if p != nil && p.uploads {
			p = nil // only a step tape holds it
		}
		e.d.plans.put(m.sig, p)
	case planStrict:
		if p != nil && e.lastProg != "" {
			p.key = e.lastProg
			e.d.plans.put(m.sig, p)
		}
	}
}

// recorded counts an op recorded into the pending graph and applies the
// mode's flush policy: every op in strict and debug mode, the size cap in
// fused mode, none while capturing.
func (e *Engine) recorded(op string) error {
	e.m.OpsRecorded++
	e.d.g.ops++
	if len(e.d.g.first) < maxFirstOps {
		e.d.g.first = append(e.d.g.first, op)
	}
	if e.capturing() || (e.mode == ModeFused || e.inColdRun()) && e.d.g.ops < e.fused {
		return nil
	}
	e.lastProg = ""
	if e.mode == ModeStrict && e.d.g.cold == nil && e.startColdRun() {
		return nil
	}
	e.why = whyEagerOp
	if e.mode == ModeFused || e.inColdRun() {
		e.why = whySizeCap
	}
	return e.flush()
}

// writeResult writes result r into the mutated argument d, with PyTorch's
// checks: the shapes agree and the result dtype casts to the argument's.
func (e *Engine) writeResult(c *dispatch.Ctx, d *TensorDesc, r *hlo.Value, what string) error {
	return e.writeResultAs(c, d, r, what, false)
}

// writeResultAs is writeResult, converting to any dtype of d when anyCast is
// set (out= kernels that compute in their out's dtype).
func (e *Engine) writeResultAs(c *dispatch.Ctx, d *TensorDesc, r *hlo.Value, what string, anyCast bool) error {
	rd := c.ResultDType(r)
	if !slices.Equal(d.Sizes, r.T.Shape) {
		return fmt.Errorf("output with shape %v doesn't match the broadcast shape %v", d.Sizes, r.T.Shape)
	}
	if !anyCast && !dispatch.CanCast(rd, d.DType) {
		return dispatch.CastError(rd, d.DType)
	}
	if d.CPU {
		return fmt.Errorf("cannot write the result into a CPU tensor (%s)", what)
	}
	v := r
	if rd != d.DType {
		// The result is rounded to its own dtype before the cast, as CPU's kernels store it.
		v = rounded(e.d.g.b, r, rd)
	}
	switch {
	case rd != d.DType && d.DType == dispatch.Bool:
		zero := e.d.g.b.BroadcastTo(e.d.g.b.Scalar(v.T.Elem, 0), v.T.Shape)
		v = e.d.g.b.Compare(hlo.NE, v, zero)
	case v.T.Elem != d.DType.Elem():
		v = e.d.g.b.Convert(v, d.DType.Elem())
	}
	return e.write(d, v)
}

// newOutput allocates a storage holding new result k, r, of the rule that
// ran in c as its pending value: contiguous, or in the memory order the
// caller asked for (layout.go). A result the rule returned padded keeps its
// padding when it is contiguous (pad.go).
func (e *Engine) newOutput(c *dispatch.Ctx, r *hlo.Value, k int) (OutTensor, error) {
	order := e.outputOrder(k, len(r.T.Shape))
	d := c.ResultDType(r)
	var pad *padding
	grown := 0
	if _, ok := c.Pads[k]; ok {
		e.padSeen = true // step tapes do not know padding: they wait (stepSegment)
	}
	if pr, ok := c.Pads[k]; ok && pr.Plain {
		grown = pr.Dim + 1
	} else if ok {
		r, pad = padResult(e.d.g.b, r, pr, order, d)
		if pad != nil {
			e.d.g.notePadCap(pad.cap)
		}
	}
	r = laidOut(e.d.g.b, r, order)
	shape := append([]int64{}, r.T.Shape...)
	if pad != nil {
		shape[pad.dim] = c.Pads[k].Size
	}
	n := numel(shape) * int64(d.Size())
	addr, err := e.newStorage(n, e.dev.cur)
	if err != nil {
		return OutTensor{}, err
	}
	st := e.storages[addr]
	st.shaped, st.dtype, st.shape, st.pad, st.grown = true, d, shape, pad, grown
	e.setPending(st, store(e.d.g.b, r, d))
	return OutTensor{Addr: addr, NBytes: n, DType: d, Sizes: st.shape}, nil
}

// cutPadded cuts the results a rule returned padded to their sizes, for
// results written into arguments.
func cutPadded(c *dispatch.Ctx, results []*hlo.Value) []*hlo.Value {
	for k, pr := range c.Pads {
		if k < len(results) && !pr.Plain && pr.Dim >= 0 && pr.Dim < results[k].T.Rank() {
			results[k] = cutTo(c.B, results[k], pr.Dim, pr.Size)
		}
	}
	return results
}

// checkDTypes rejects tensor arguments of a dtype the device cannot hold
// (float8 and quantized dtypes, among others).
func checkDTypes(args []dispatch.Arg) error {
	for _, a := range args {
		for _, m := range a.Tensors {
			if m.Defined && !m.DType.Supported() {
				return fmt.Errorf("dtype %s is not supported on tpu", m.DType)
			}
		}
	}
	return nil
}

func describe(args []dispatch.Arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// opError adds the op and its arguments to a rule's error, after the
// message, so that the message starts as CPU's does.
type opError struct {
	op, args string
	err      error
}

func (e *opError) Error() string {
	return fmt.Sprintf("%s (%s on tpu, arguments: %s)", strings.TrimPrefix(e.err.Error(), "hlo: "), e.op, e.args)
}

func (e *opError) Unwrap() error { return e.err }
