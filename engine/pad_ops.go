package engine

import (
	"slices"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// Ops on padded arguments (dispatch/padded_ops.go). An op of a kind other
// than PadNone whose arguments include a padded storage, viewed whole (with
// dimensions of size 1 put in or left out), runs its rule on the storage as
// held: the rule sees the argument at its capacity and reads the padded
// value, so the program depends on the capacity and takes the size as a
// runtime scalar. The result is zeroed past the size and held padded, or is
// plain where the op reduces the padded dimension away. Where the rule's
// result is not of the expected shape the rule runs again on the arguments
// at their sizes, as for any other op.

// padOp is an op lowered on padded arguments.
type padOp struct {
	args []dispatch.Arg // the rule's arguments, padded ones at their capacity
	dim  int            // the result's padded dimension; -1 for a plain result
	n    int64          // the size along it
	cap  int64
	size *hlo.Value // n as a runtime scalar
	// copyTo is copy_'s destination, a storage never written (PadCopy).
	copyTo *Storage
	// redirect: the padded arguments repeat their first position past the
	// size (PadScatter).
	redirect bool
	// consts are arguments of one known value shaped as a padded one
	// (constantArgs), read at the capacity too.
	consts []padded
}

// padView returns the padded storage t views whole, with t's dimension that
// is the storage's padded one and, when t permutes the storage's dimensions
// (a permute or transpose of it), the storage dimension each of t's
// dimensions of size other than 1 is, in t's order: t is at offset 0, of the
// storage's dtype, and its dimensions of size other than 1 are the storage's
// in some order, with their strides; dimensions of size 1 may be put in or
// left out. A storage of size 1 along its padded dimension is not matched.
func (e *Engine) padView(t *TensorDesc) (st *Storage, vdim int, order []int, ok bool) {
	if t.CPU || t.Addr == 0 || e.capturing() {
		return nil, 0, nil, false
	}
	st = e.storages[t.Addr]
	if st == nil || st.pad == nil || st.dtype != t.DType || t.Offset != 0 || st.shape[st.pad.dim] <= 1 ||
		len(st.shape) > 62 {
		return nil, 0, nil, false
	}
	strides := contiguousStrides(st.shape)
	var used uint64
	vdim, permuted := -1, false
	for j, s := range t.Sizes {
		if s == 1 {
			continue
		}
		// The first dimension of a stride is the one of size other than 1 (those of size 1 after it share it).
		i := slices.Index(strides, t.Strides[j])
		if i < 0 || st.shape[i] != s || used&(1<<i) != 0 {
			return nil, 0, nil, false
		}
		permuted = permuted || len(order) > 0 && order[len(order)-1] > i
		used |= 1 << i
		order = append(order, i)
		if i == st.pad.dim {
			vdim = j
		}
	}
	for i, s := range st.shape {
		if s != 1 && used&(1<<i) == 0 {
			return nil, 0, nil, false
		}
	}
	if vdim < 0 {
		return nil, 0, nil, false
	}
	if !permuted {
		order = nil
	}
	return st, vdim, order, true
}

// padSubst makes tensor q.idx of argument a read its padded storage as held,
// along q.t's dimension q.vdim: a copy of the argument whose meta has the
// capacity there, and whose handle reads the padded value (Engine.Read),
// permuted as q.t views it.
func (e *Engine) padSubst(a dispatch.Arg, q padded) dispatch.Arg {
	st := q.st
	nt := *q.t
	nt.Sizes = slices.Clone(q.t.Sizes)
	nt.Sizes[q.vdim] = st.pad.cap
	nt.Strides = contiguousStrides(nt.Sizes)
	a.Tensors, a.Handles = slices.Clone(a.Tensors), slices.Clone(a.Handles)
	a.Tensors[q.idx], a.Handles[q.idx] = nt.Meta(), &nt
	b, v := e.d.g.b, e.physValue(st)
	if q.order != nil {
		// The storage's dimensions of size other than 1, at the capacity, then in the view's order.
		var core []int64
		for _, s := range physShape(st) {
			if s != 1 {
				core = append(core, s)
			}
		}
		sorted := slices.Sorted(slices.Values(q.order))
		perm := make([]int64, len(q.order))
		for k, i := range q.order {
			perm[k] = int64(slices.Index(sorted, i))
		}
		v = b.Transpose(b.Reshape(v, core...), perm...)
	}
	e.readAs(&nt, b.Reshape(v, nt.Sizes...))
	e.d.g.notePadCap(st.pad.cap)
	return a
}

// readAs makes the handle t read v (Engine.Read).
func (e *Engine) readAs(t *TensorDesc, v *hlo.Value) {
	if e.padReads == nil {
		e.padReads = map[*TensorDesc]*hlo.Value{}
	}
	e.padReads[t] = v
}

// padded is one padded tensor argument: tensor idx of argument arg.
type padded struct {
	arg, idx int
	t        *TensorDesc
	st       *Storage
	vdim     int
	order    []int // the storage dimensions t permutes (padView), nil when in order
}

// paddedArgs returns the padded tensors among args[from:to].
func (e *Engine) paddedArgs(args []dispatch.Arg, from, to int) []padded {
	var ps []padded
	for i := from; i < to && i < len(args); i++ {
		if args[i].Kind != dispatch.ArgTensor && args[i].Kind != dispatch.ArgTensorList {
			continue
		}
		for j, h := range args[i].Handles {
			if t, ok := h.(*TensorDesc); ok && args[i].Tensors[j].Defined {
				if st, vdim, order, ok := e.padView(t); ok {
					ps = append(ps, padded{i, j, t, st, vdim, order})
				}
			}
		}
	}
	return ps
}

// alignPadded checks that the tensors of args[from:to], broadcast together,
// meet the padded ones ps in one result dimension of one size and capacity,
// where every other tensor has size 1 or no dimension. It returns that
// dimension of the broadcast shape.
func alignPadded(args []dispatch.Arg, from, to int, ps []padded) (int, bool) {
	rank := 0
	for i := from; i < to && i < len(args); i++ {
		for _, m := range args[i].Tensors {
			rank = max(rank, len(m.Sizes))
		}
	}
	dim := -1
	for _, p := range ps {
		d := p.vdim + rank - len(p.t.Sizes)
		if p.st == nil { // a constant shaped as the first padded tensor (constantArgs)
			if d != dim {
				return 0, false
			}
			continue
		}
		if dim >= 0 && (d != dim || p.st.shape[p.st.pad.dim] != ps[0].st.shape[ps[0].st.pad.dim] ||
			p.st.pad.cap != ps[0].st.pad.cap) {
			return 0, false
		}
		dim = d
	}
	for i := from; i < to && i < len(args); i++ {
		for j, m := range args[i].Tensors {
			if slices.ContainsFunc(ps, func(p padded) bool { return p.arg == i && p.idx == j }) {
				continue
			}
			if k := dim - (rank - len(m.Sizes)); m.Defined && k >= 0 && m.Sizes[k] != 1 {
				return 0, false
			}
		}
	}
	return dim, dim >= 0
}

// planPadOp decides whether op of kind runs on its padded arguments as held,
// and returns the substituted arguments; nil when it does not.
func (e *Engine) planPadOp(kind dispatch.PadKind, args []dispatch.Arg) *padOp {
	if !e.padOn || e.mode == ModeDebug || e.capturing() {
		return nil
	}
	p := &padOp{dim: -1}
	ps, args := e.matchPadOp(kind, args, p)
	if len(ps) == 0 {
		return nil
	}
	st := ps[0].st
	p.n, p.cap = st.shape[st.pad.dim], st.pad.cap
	p.args = slices.Clone(args)
	for _, q := range ps {
		p.args[q.arg] = e.padSubst(p.args[q.arg], q)
	}
	for _, q := range p.consts {
		p.args[q.arg] = e.constSubst(p.args[q.arg], q, st.pad.cap)
	}
	p.size = e.windowStarts([]int64{p.n})[0]
	if p.redirect {
		for _, q := range ps {
			e.repeatFirst(p.args[q.arg].Handles[q.idx].(*TensorDesc), q.vdim, p.size)
		}
	}
	return p
}

// matchPadOp returns the padded arguments an op of kind reads as held, and
// the arguments its rule gets, setting p's result dimension and what else
// the kind needs; no padded arguments when the op computes at the sizes.
func (e *Engine) matchPadOp(kind dispatch.PadKind, args []dispatch.Arg, p *padOp) ([]padded, []dispatch.Arg) {
	var ps []padded
	switch kind {
	case dispatch.PadElementwise:
		ps = e.paddedArgs(args, 0, len(args))
		consts := e.constantArgs(args, ps)
		dim, ok := alignPadded(args, 0, len(args), append(slices.Clone(ps), consts...))
		if !ok {
			return nil, args
		}
		p.dim, p.consts = dim, consts
	case dispatch.PadSum:
		if ps = e.paddedArgs(args, 0, 1); len(ps) > 0 {
			p.dim = sumKeeps(args, ps[0].vdim, len(ps[0].t.Sizes))
		}
	case dispatch.PadIndex:
		if ps = e.padIndex(args); ps == nil {
			return nil, args
		}
		if len(ps) > 1 {
			dim, ok := alignPadded(args, 1, 2, ps[1:])
			if !ok {
				return nil, args
			}
			p.dim = dim
		}
		if ps[0].st == nil {
			ps = ps[1:]
		}
	case dispatch.PadSelect:
		ps = e.matchSelect(args, p)
	case dispatch.PadGather, dispatch.PadScatter:
		ps = e.matchGatherScatter(kind, args, p)
	case dispatch.PadEnd:
		if ps = e.paddedArgs(args, 0, 1); len(ps) > 0 {
			args = padToEnd(args, ps[0])
		}
		if args == nil {
			return nil, nil
		}
	case dispatch.PadCopy:
		ps, args = e.matchCopy(args, p)
	}
	return ps, args
}

// matchCopy is matchPadOp for copy_ of a padded source into a storage never
// written, whole, of its shape: the destination is held padded too.
func (e *Engine) matchCopy(args []dispatch.Arg, p *padOp) ([]padded, []dispatch.Arg) {
	ps := e.paddedArgs(args, 1, 2)
	if len(ps) == 0 {
		return nil, args
	}
	dst := args[0].Handles[0].(*TensorDesc)
	if p.copyTo = e.freshWhole(dst); p.copyTo == nil || !slices.Equal(dst.Sizes, ps[0].t.Sizes) {
		return nil, args
	}
	p.dim = ps[0].vdim
	nd := *dst
	nd.Sizes = slices.Clone(dst.Sizes)
	nd.Sizes[p.dim] = ps[0].st.pad.cap
	nd.Strides = contiguousStrides(nd.Sizes)
	args = slices.Clone(args)
	args[0].Tensors, args[0].Handles = []dispatch.TensorMeta{nd.Meta()}, []any{&nd}
	return ps, args
}

// sumKeeps returns where the padded dimension vdim of a rank-r input lands
// in the result of aten::sum or aten::sum.dim_IntList (args), or -1 when the
// sum reduces it.
func sumKeeps(args []dispatch.Arg, vdim, r int) int {
	if len(args) < 2 || args[1].Kind != dispatch.ArgIntList || len(args[1].Ints) == 0 {
		return -1 // every dimension
	}
	keep := len(args) > 2 && args[2].Kind == dispatch.ArgBool && args[2].Int != 0
	dim := vdim
	for _, d := range args[1].Ints {
		if d < 0 {
			d += int64(r)
		}
		switch {
		case d == int64(vdim):
			return -1
		case d < int64(vdim) && !keep:
			dim--
		}
	}
	return dim
}

// freshWhole returns the storage t views when no value was ever written to
// it and t covers all of it, contiguously from offset 0.
func (e *Engine) freshWhole(t *TensorDesc) *Storage {
	if t.CPU || t.Addr == 0 {
		return nil
	}
	st := e.storages[t.Addr]
	if st == nil || st.shaped || t.Offset != 0 || !t.view().isContiguous() ||
		numel(t.Sizes)*int64(t.DType.Size()) != st.nbytes || t.DType == dispatch.ComplexHalf {
		return nil
	}
	return st
}

// finishPadOp zeroes the padded result r past the size and declares it
// padded; ok is false when r is not of the shape expected.
func (e *Engine) finishPadOp(c *dispatch.Ctx, p *padOp, r *hlo.Value) (*hlo.Value, bool) {
	if p.dim < 0 {
		return r, true
	}
	if p.dim >= r.T.Rank() || r.T.Shape[p.dim] != p.cap {
		return nil, false
	}
	b := c.B
	r = b.Select(dispatch.ValidMask(b, r.T.Shape, p.dim, p.size), r, b.BroadcastTo(b.Scalar(r.T.Elem, 0), r.T.Shape))
	c.PadResultAt(0, p.dim, p.n)
	return r, true
}

// holdPadded gives st, a storage never written, the value r of dtype d,
// padded along dim to its capacity, n elements there.
func (e *Engine) holdPadded(st *Storage, r *hlo.Value, d dispatch.DType, dim int, n int64) {
	shape := slices.Clone(r.T.Shape)
	shape[dim] = n
	st.shaped, st.dtype, st.shape = true, d, shape
	st.pad, st.grown = &padding{dim: dim, cap: r.T.Shape[dim]}, 0
	e.d.g.notePadCap(st.pad.cap)
	e.padSeen = true
	e.setPending(st, store(e.d.g.b, r, d))
}

// padOut holds an out= op's one padded result in its out argument when that
// is a storage never written, whole, of the result's size (arange into the
// tensor torch.arange makes for it); ok is false otherwise.
func (e *Engine) padOut(c *dispatch.Ctx, results []*hlo.Value) bool {
	pr, ok := c.Pads[0]
	if !ok || pr.Plain || len(results) != 1 || len(c.Args) == 0 {
		return false
	}
	r := results[0]
	t, ok := c.Args[len(c.Args)-1].Handles[0].(*TensorDesc)
	if !ok || pr.Dim < 0 || pr.Dim >= r.T.Rank() || len(t.Sizes) != r.T.Rank() || t.Sizes[pr.Dim] != pr.Size ||
		c.ResultDType(r) != t.DType {
		return false
	}
	st := e.freshWhole(t)
	if st == nil {
		return false
	}
	for i, s := range t.Sizes {
		if i != pr.Dim && s != r.T.Shape[i] {
			return false
		}
	}
	c.OutArgs = 1
	e.holdPadded(st, r, t.DType, pr.Dim, pr.Size)
	return true
}
