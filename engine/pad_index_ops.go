package engine

import (
	"slices"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// Indexing ops on padded arguments (pad_ops.go): which padded indices,
// inputs and pads may be read at their capacity.

// padToEnd returns constant_pad_nd's args for its padded input q read at
// its capacity: zeros added only at the end of q's padded dimension, the
// result's length there kept. nil when the op pads otherwise.
func padToEnd(args []dispatch.Arg, q padded) []dispatch.Arg {
	if len(args) < 2 || args[1].Kind != dispatch.ArgIntList {
		return nil
	}
	if len(args) > 2 && args[2].Kind != dispatch.ArgNone && (args[2].Double != 0 || args[2].Int != 0) {
		return nil
	}
	pads := args[1].Ints
	j := len(q.t.Sizes) - 1 - q.vdim
	if 2*j+1 >= len(pads) || pads[2*j] != 0 {
		return nil
	}
	n := q.st.shape[q.st.pad.dim]
	length := n + pads[2*j+1]
	if length < 1 {
		return nil
	}
	args = slices.Clone(args)
	args[1].Ints = slices.Clone(pads)
	args[1].Ints[2*j+1] = length - q.st.pad.cap
	return args
}

// matchSelect is matchPadOp for index_select: a padded input selected along
// another dimension stays padded; a padded index (an embedding of values
// computed from positions) pads the result along the dimension selected.
func (e *Engine) matchSelect(args []dispatch.Arg, p *padOp) []padded {
	if len(args) < 3 || args[1].Kind != dispatch.ArgInt {
		return nil
	}
	ps := e.paddedArgs(args, 0, 1)
	if idx := e.paddedArgs(args, 2, 3); len(idx) > 0 {
		if len(ps) > 0 || len(idx[0].t.Sizes) != 1 || !e.indexFits(args, idx[0]) {
			return nil
		}
		p.dim = opDim(args)
		return idx
	}
	if len(ps) == 0 || opDim(args) == ps[0].vdim {
		return nil
	}
	p.dim = ps[0].vdim
	return ps
}

// matchGatherScatter is matchPadOp for gather and scatter with a padded
// index of a known range, into an input that is not padded; a scatter's
// source is padded as its index is.
func (e *Engine) matchGatherScatter(kind dispatch.PadKind, args []dispatch.Arg, p *padOp) []padded {
	ps := e.paddedArgs(args, 2, 4)
	if len(ps) == 0 || ps[0].arg != 2 || !e.indexFits(args, ps[0]) || len(e.paddedArgs(args, 0, 1)) > 0 {
		return nil
	}
	if kind == dispatch.PadGather {
		p.dim = ps[0].vdim
		return ps
	}
	if len(args) > 3 && args[3].Kind == dispatch.ArgTensor {
		if len(ps) != 2 || ps[1].vdim != ps[0].vdim || ps[1].st.shape[ps[1].st.pad.dim] != ps[0].st.shape[ps[0].st.pad.dim] ||
			ps[1].st.pad.cap != ps[0].st.pad.cap {
			return nil
		}
	}
	p.redirect = true
	return ps
}

// opDim returns the dimension argument (args[1]) of index_select, gather or
// scatter in the range of their input's dimensions (a 0-dim input counts as
// one dimension).
func opDim(args []dispatch.Arg) int {
	d, r := int(args[1].Int), max(len(args[0].Tensors[0].Sizes), 1)
	if d < 0 {
		d += r
	}
	return d
}

// indexWithin reports whether the values of the padded index q lie in
// [0, size), from their known range or else from the values the op's index
// check read before its rule (Needs.HostArgs), whose range the index's
// storage then keeps: no read of its own.
func (e *Engine) indexWithin(q padded, size int64) bool {
	lo, hi, ok := e.IntRange(q.t)
	if !ok {
		vs, err := e.Int64s(q.t)
		if err != nil || len(vs) == 0 {
			return false
		}
		lo, hi = slices.Min(vs), slices.Max(vs)
		if q.st.pending == nil {
			q.st.known = &intRange{lo, hi}
		}
	}
	return lo >= 0 && hi < size
}

// indexFits reports whether the padded index q of index_select, gather or
// scatter (args) may be read at its capacity: its values lie in the input's
// range along the op's dimension, and, for gather and scatter (an index of
// the input's rank), the input holds the whole capacity along the index's
// padded dimension where that is another.
func (e *Engine) indexFits(args []dispatch.Arg, q padded) bool {
	if len(args) < 3 || args[1].Kind != dispatch.ArgInt || len(args[0].Tensors) != 1 {
		return false
	}
	m := args[0].Tensors[0]
	d := opDim(args)
	if len(m.Sizes) == 0 || d < 0 || d >= len(m.Sizes) || !e.indexWithin(q, m.Sizes[d]) {
		return false
	}
	return len(q.t.Sizes) == 1 || len(q.t.Sizes) == len(m.Sizes) && (q.vdim == d || q.st.pad.cap <= m.Sizes[q.vdim])
}

// repeatFirst makes the padded argument t, read as held, repeat its first
// position along dim past the size: a scatter then writes there what it
// writes at the first position.
func (e *Engine) repeatFirst(t *TensorDesc, dim int, size *hlo.Value) {
	b, v := e.d.g.b, e.padReads[t]
	shape := v.T.Shape
	limit := slices.Clone(shape)
	limit[dim] = 1
	ones, all := make([]int64, len(shape)), make([]int64, len(shape))
	for i := range ones {
		ones[i], all[i] = 1, int64(i)
	}
	first := b.BroadcastInDim(b.Slice(v, make([]int64, len(shape)), limit, ones), shape, all)
	e.padReads[t] = b.Select(dispatch.ValidMask(b, shape, dim, size), v, first)
}

// keepAppend marks index_select's plain result as an append where its input
// is one along another dimension than the one it selects along (a beam
// search's reordered cache after its first append), so the next append
// starts padding.
func (e *Engine) keepAppend(c *dispatch.Ctx) {
	args := c.Args
	if len(args) < 3 || args[0].Kind != dispatch.ArgTensor || args[1].Kind != dispatch.ArgInt || len(c.Pads) > 0 {
		return
	}
	t, ok := args[0].Handles[0].(*TensorDesc)
	if !ok || t.CPU || t.Addr == 0 {
		return
	}
	st := e.storages[t.Addr]
	if st == nil || st.grown == 0 || st.pad != nil || st.dtype != t.DType || !t.offsetFreeWhole(st.shape) ||
		opDim(args) == st.grown-1 {
		return
	}
	c.AppendedAt(0, st.grown-1)
}

// padIndex returns the padded tensors of index.Tensor's arguments, the
// input first (with st nil when it is not read as held): every dimension of
// the input has an index tensor, and a padded input's padded dimension has
// indices known to lie in [0, size). nil when the op reads nothing padded.
func (e *Engine) padIndex(args []dispatch.Arg) []padded {
	if len(args) < 2 || args[1].Kind != dispatch.ArgTensorList || len(args[0].Tensors) != 1 {
		return nil
	}
	src := args[0].Tensors[0]
	if len(args[1].Tensors) != len(src.Sizes) {
		return nil
	}
	for _, m := range args[1].Tensors {
		if !m.Defined || m.DType == dispatch.Bool || m.DType == dispatch.Uint8 {
			return nil
		}
	}
	in := padded{}
	if ps := e.paddedArgs(args, 0, 1); len(ps) == 1 {
		n := ps[0].st.shape[ps[0].st.pad.dim]
		lo, hi, ok := e.IntRange(args[1].Handles[ps[0].vdim])
		if !ok || lo < 0 || hi >= n {
			return nil
		}
		in = ps[0]
	}
	idx := e.paddedArgs(args, 1, 2)
	if in.st == nil && len(idx) == 0 {
		return nil
	}
	return append([]padded{in}, idx...)
}

// constantArgs returns the tensors among args, other than the padded ones ps,
// that hold one known value (constantOf) in the shape of the first padded
// tensor (torch.zeros_like of it, which PyTorch makes as a new tensor and a
// fill): read at the capacity, they compute with it as held.
func (e *Engine) constantArgs(args []dispatch.Arg, ps []padded) []padded {
	if len(ps) == 0 {
		return nil
	}
	var cs []padded
	for i, a := range args {
		if a.Kind != dispatch.ArgTensor {
			continue
		}
		for j, h := range a.Handles {
			t, ok := h.(*TensorDesc)
			if !ok || !a.Tensors[j].Defined || slices.ContainsFunc(ps, func(p padded) bool { return p.arg == i && p.idx == j }) ||
				!slices.Equal(t.Sizes, ps[0].t.Sizes) {
				continue
			}
			if _, ok := e.constantOf(t); ok {
				cs = append(cs, padded{arg: i, idx: j, t: t, vdim: ps[0].vdim})
			}
		}
	}
	return cs
}

// constantOf returns the one value every element of tensor t holds when the
// engine knows it: a storage given a shape but no value (zeros), or integers
// of one known value (a fill).
func (e *Engine) constantOf(t *TensorDesc) (int64, bool) {
	if t.CPU || t.Addr == 0 {
		return 0, false
	}
	st := e.storages[t.Addr]
	if st == nil || st.pad != nil {
		return 0, false
	}
	if st.shaped && storageState(st) == stateZero {
		return 0, true
	}
	if lo, hi, ok := e.IntRange(t); ok && lo == hi {
		return lo, true
	}
	return 0, false
}

// constSubst makes tensor q.idx of argument a read its one value at the
// capacity along q.vdim.
func (e *Engine) constSubst(a dispatch.Arg, q padded, capacity int64) dispatch.Arg {
	v, _ := e.constantOf(q.t)
	nt := *q.t
	nt.Sizes = slices.Clone(q.t.Sizes)
	nt.Sizes[q.vdim] = capacity
	nt.Strides = contiguousStrides(nt.Sizes)
	a.Tensors, a.Handles = slices.Clone(a.Tensors), slices.Clone(a.Handles)
	a.Tensors[q.idx], a.Handles[q.idx] = nt.Meta(), &nt
	b := e.d.g.b
	x := b.Convert(b.ConstantInt(hlo.T(hlo.S64), v), q.t.DType.Elem())
	e.readAs(&nt, b.BroadcastInDim(x, nt.Sizes, nil))
	return a
}
