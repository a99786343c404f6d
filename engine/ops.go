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

// Op runs op on args: the rule checks the arguments now (bad input fails
// here, in every mode), records its lowering into the pending graph, and the
// mode's policy decides when the graph runs. Results that belong to mutated
// arguments (in-place and out=) are written there; the others come back as
// new storages. The op runs on its tensors' device; an op without tpu
// tensors runs on device (the current device when device is -1).
func (e *Engine) OpOn(op string, device int, args []dispatch.Arg) (outs []OutTensor, err error) {
	return e.opOn(op, device, args, nil)
}

func (e *Engine) opOn(op string, device int, args []dispatch.Arg, layouts [][]int64) (outs []OutTensor, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.layouts = layouts
	defer func() { e.layouts = nil }()
	t0 := time.Now()
	defer func() { e.m.OpSeconds += time.Since(t0).Seconds() }()
	if err := e.ready(); err != nil {
		return nil, err
	}
	entry, ok := dispatch.Lookup(op)
	if !ok || !dispatch.AcceptsComplexScalars(entry.Rule, args) {
		return nil, ErrNoRule
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
		if errors.Is(err, dispatch.ErrRunOnCPU) {
			outs, err = nil, ErrNoRule
			return
		}
		if err != nil {
			var nan *NaNError
			if _, resize := err.(*ResizeError); !resize && !errors.As(err, &nan) {
				err = &opError{op: op, args: describe(args), err: err}
			}
		}
	}()
	dev, err := e.argsDevice(args, device)
	if err != nil {
		return nil, err
	}
	if err := e.useDevice(dev); err != nil {
		return nil, err
	}
	var sig hlo.Hash
	planning := false
	if e.mode == ModeStrict && !e.capturing() && e.g.ops == 0 && len(e.g.params) == 0 && len(e.g.pending) == 0 {
		sig, planning = e.opSignature(op, args, false)
		if p := e.plans[sig]; planning && p != nil {
			outs, ok, err := e.replay(p, args)
			if ok {
				return outs, err
			}
			delete(e.plans, sig)
		}
	}
	var fsig hlo.Hash
	var mark *fusedMark
	if e.mode == ModeFused && !e.capturing() && !e.noFusedPath {
		s, ok := e.opSignature(op, args, true)
		p, known := e.fusedPlans[s]
		if ok && p != nil {
			outs, ok, err := e.replayFused(p, args)
			if ok {
				if err == nil {
					err = e.recorded(op)
				}
				if err != nil {
					return nil, err
				}
				return outs, nil
			}
			delete(e.fusedPlans, s)
			known = false
		}
		if ok && !known { // a signature whose op cannot be planned is known with a nil plan
			if fsig, mark = s, e.markFused(args); mark != nil {
				defer func() { e.fusedLog = nil }()
			}
		}
	}
	execsBefore := e.m.Executions
	if err := checkDTypes(args); err != nil {
		return nil, err
	}
	c := &dispatch.Ctx{Op: op, B: e.g.b, Args: args, R: e, NoHostChecks: e.capturing()}
	e.cur, e.curOp = c, op
	defer func() { e.cur = nil }()
	results, err := entry.Rule.Fn(c)
	if err != nil {
		return nil, err
	}
	switch entry.Variant {
	case dispatch.Functional:
		for k, r := range results {
			o, err := e.newOutput(r, k)
			if err != nil {
				return nil, err
			}
			outs = append(outs, o)
		}
	case dispatch.Inplace:
		// self is a tensor, or a tensor list for the _foreach_ ops.
		for i, h := range args[0].Handles {
			if i >= len(results) {
				return nil, fmt.Errorf("the rule gave %d results for %d tensors", len(results), len(args[0].Handles))
			}
			if err := e.writeResult(h.(*TensorDesc), results[i], "self"); err != nil {
				return nil, err
			}
		}
	case dispatch.OutVariant:
		k := len(results)
		if len(args) < k {
			return nil, fmt.Errorf("expected %d out= arguments", k)
		}
		dsts := args[len(args)-k:]
		anyCast := make([]bool, k)
		for i, r := range results {
			var err error
			if anyCast[i], err = dispatch.CheckOutDType(op, dispatch.FromElem(r.T.Elem), dsts[i].Tensors[0].DType); err != nil {
				return nil, err
			}
		}
		if err := checkOutOverlap(entry.Rule, args[:len(args)-k], dsts, results); err != nil {
			return nil, err
		}
		var resize [][]int64
		for i, r := range results {
			d := dsts[len(resize)].Handles[0].(*TensorDesc)
			if entry.Rule.OutKeepsShape && !slices.Equal(d.Sizes, r.T.Shape) && numel(d.Sizes) == numel(r.T.Shape) {
				r = e.g.b.Reshape(r, d.Sizes...)
				results[i] = r
			}
			if !slices.Equal(d.Sizes, r.T.Shape) {
				resize = append(resize, r.T.Shape)
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
				return nil, &ResizeError{Sizes: resize, Modes: modes}
			}
		}
		for i, r := range results {
			if err := e.writeResultAs(dsts[i].Handles[0].(*TensorDesc), r, "out", anyCast[i]); err != nil {
				return nil, err
			}
		}
	}
	for _, w := range c.Writes {
		if err := e.writeResult(args[w.Arg].Handles[w.Index].(*TensorDesc), w.V, "argument"); err != nil {
			return nil, err
		}
	}
	e.keepRanges(c, entry.Variant, args, outs, len(results))
	if mark != nil {
		e.fusedLog = nil
		var p *fusedPlan
		if len(c.Ranges) == 0 { // a replay would not keep the ranges
			p = e.makeFusedPlan(mark, args, outs)
		}
		if len(e.fusedPlans) >= maxPlans {
			clear(e.fusedPlans)
		}
		e.fusedPlans[fsig] = p
	}
	var plan *opPlan
	if planning && len(c.Ranges) == 0 { // as above

		plan = e.makePlan(args, outs, execsBefore)
	}
	if err := e.recorded(op); err != nil {
		return nil, err
	}
	if plan != nil && e.lastProg != "" {
		if len(e.plans) >= maxPlans {
			clear(e.plans)
		}
		plan.key = e.lastProg
		e.plans[sig] = plan
	}
	return outs, nil
}

// recorded counts an op recorded into the pending graph and applies the
// mode's flush policy: every op in strict and debug mode, the size cap in
// fused mode, none while capturing.
func (e *Engine) recorded(op string) error {
	e.m.OpsRecorded++
	e.g.ops++
	if len(e.g.first) < maxFirstOps {
		e.g.first = append(e.g.first, op)
	}
	if e.capturing() || (e.mode == ModeFused && e.g.ops < e.fused) {
		return nil
	}
	e.lastProg = ""
	e.why = whyEagerOp
	if e.mode == ModeFused {
		e.why = whySizeCap
	}
	return e.flush()
}

// writeResult writes result r into the mutated argument d, with PyTorch's
// checks: the shapes agree and the result dtype casts to the argument's.
func (e *Engine) writeResult(d *TensorDesc, r *hlo.Value, what string) error {
	return e.writeResultAs(d, r, what, false)
}

// writeResultAs is writeResult, converting to any dtype of d when anyCast is
// set (out= kernels that compute in their out's dtype).
func (e *Engine) writeResultAs(d *TensorDesc, r *hlo.Value, what string, anyCast bool) error {
	rd := dispatch.FromElem(r.T.Elem)
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
		if d.DType == dispatch.Bool {
			zero := e.g.b.BroadcastTo(e.g.b.Scalar(r.T.Elem, 0), r.T.Shape)
			v = e.g.b.Compare(hlo.NE, r, zero)
		} else {
			v = e.g.b.Convert(r, d.DType.Elem())
		}
	}
	return e.write(d, v)
}

// newOutput allocates a storage holding new result k, r, as its pending
// value: contiguous, or in the memory order the caller asked for (layout.go).
func (e *Engine) newOutput(r *hlo.Value, k int) (OutTensor, error) {
	r = laidOut(e.g.b, r, e.outputOrder(k, len(r.T.Shape)))
	d := dispatch.FromElem(r.T.Elem)
	n := numel(r.T.Shape) * int64(d.Size())
	addr, err := e.newStorage(n, e.dev.cur)
	if err != nil {
		return OutTensor{}, err
	}
	st := e.storages[addr]
	st.shaped, st.dtype, st.shape = true, d, append([]int64{}, r.T.Shape...)
	e.setPending(st, r)
	return OutTensor{Addr: addr, NBytes: n, DType: d, Sizes: st.shape}, nil
}

// checkDTypes rejects tensor arguments of a dtype the device cannot hold
// (complex32 has no XLA element type).
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
