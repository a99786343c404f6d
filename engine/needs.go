package engine

import (
	"fmt"
	"slices"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// A rule's needs (dispatch.Needs) are read before it runs. Declared host
// arguments are read to the host first, so that the read flushes the pending
// graph before the rule records anything; a rule that reads values it
// computes starts on an empty graph in fused mode. A read that happens while a
// rule records (a value it computed, or an argument whose range the engine
// knew) is computed by a program of its own that leaves the pending graph
// and the rule's builder as they are: nothing flushes under a running rule.

// hostArgsToRead returns the declared host arguments of r among args whose
// values the engine does not know the range of: integer and bool tensors on
// the device. None while a program is captured (rules skip index checks
// there; a mask read ends the capture).
func (e *Engine) hostArgsToRead(r *dispatch.Rule, args []dispatch.Arg) []*TensorDesc {
	if e.capturing() {
		return nil
	}
	var ts []*TensorDesc
	for _, i := range r.Needs.HostArgs {
		if i >= len(args) {
			continue
		}
		for _, h := range args[i].Handles {
			t, ok := h.(*TensorDesc)
			if !ok || t == nil || t.CPU || t.Addr == 0 || !t.DType.IsIntegral(true) {
				continue
			}
			if _, _, known := e.IntRange(t); known {
				continue
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// beforeRule reads the rule's declared host arguments and, for a rule that
// reads its own results, runs the pending graph first, both before the rule
// records anything.
func (e *Engine) beforeRule(r *dispatch.Rule, reads []*TensorDesc) error {
	for _, t := range reads {
		vals, err := e.Int64s(t)
		if err != nil {
			return err
		}
		if e.hostVals == nil {
			e.hostVals = map[*TensorDesc][]int64{}
		}
		e.hostVals[t] = vals
	}
	if r.Needs.Results && !e.capturing() && e.d.g.ops > 0 {
		e.why = whyRuleReads
		return e.flush()
	}
	return nil
}

// needed checks that the running rule declared a need it has: an error for an
// undeclared one where TORCHTPU_CHECK_NEEDS=1.
func (e *Engine) needed(declared bool, what string) error {
	if declared || e.cur == nil || !e.checkNeeds {
		return nil
	}
	return fmt.Errorf("internal: the rule of %s %s but does not declare it (dispatch.Needs)", e.curOp, what)
}

// declaredHostArg reports whether handle t is a tensor of a declared host
// argument of the running rule.
func (e *Engine) declaredHostArg(t *TensorDesc) bool {
	entry, ok := dispatch.Lookup(e.curOp)
	if !ok {
		return false
	}
	for _, i := range entry.Rule.Needs.HostArgs {
		if i < len(e.cur.Args) && slices.ContainsFunc(e.cur.Args[i].Handles, func(h any) bool { return h == any(t) }) {
			return true
		}
	}
	return false
}

// ruleNeeds returns the running rule's declared needs.
func (e *Engine) ruleNeeds() dispatch.Needs {
	if entry, ok := dispatch.Lookup(e.curOp); ok && e.cur != nil {
		return entry.Rule.Needs
	}
	return dispatch.Needs{}
}

// readWhileRecording copies the view t to dst while a rule records: from its
// storage's buffer when that holds the view whole, else by evaluating it.
func (e *Engine) readWhileRecording(t *TensorDesc, dst []byte) error {
	st, done, err := e.hostSource(t, dst)
	if done || err != nil {
		return err
	}
	if err := e.syncInCapture(); err != nil {
		return err
	}
	if st.pending == nil && st.buf != nil && st.pad == nil && st.dtype == t.DType && t.offsetFreeWhole(st.shape) {
		return e.copyToHost(st.buf, dst, "values a rule reads")
	}
	v := e.Read(t)
	if !slices.Equal(v.T.Shape, t.Sizes) {
		v = e.d.g.b.Reshape(v, t.Sizes...)
	}
	return e.evaluateToHost(v, dst)
}

// evaluateToHost computes v from the device's pending graph and copies it to
// dst, without consuming the graph: the pending graph and the running rule's
// builder stay as they are, and v's ops run again when the graph runs.
func (e *Engine) evaluateToHost(v *hlo.Value, dst []byte) error {
	if err := e.syncInCapture(); err != nil {
		return err
	}
	g := e.d.g
	last, fl := e.lastProg, e.fl
	defer func() { e.lastProg, e.fl = last, fl }()
	e.fl = flushCtx{reason: whyRuleReads, ops: g.ops, first: g.first}
	e.m.Flushes[whyRuleReads]++
	prog, err := e.program(g.b, []*hlo.Value{v}, nil)
	if err != nil {
		return err
	}
	args := make([]*pjrt.Buffer, len(prog.used))
	for i, p := range prog.used {
		args[i] = g.params[p]
	}
	var out *pjrt.Buffer
	l := launch{key: e.lastProg, what: "values " + e.curOp + " reads", ops: g.ops, device: e.dev.cur}
	if _, err := e.execute(l, prog.run(), args, func(rs []*pjrt.Buffer) []*pjrt.Buffer {
		out = rs[0]
		return nil
	}); err != nil {
		return fmt.Errorf("torchtpu: computing the values %s reads: %w", e.curOp, err)
	}
	defer out.Destroy()
	if len(dst) == 0 {
		return nil
	}
	return e.copyToHost(out, dst, "values a rule reads")
}
