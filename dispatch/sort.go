package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// sortLess returns a sort comparator on the first operand pair that orders
// ascending (or descending) with NaN as the largest value, as PyTorch does.
func sortLess(descending bool) func(rb *hlo.Builder, a []*hlo.Value) *hlo.Value {
	return func(rb *hlo.Builder, a []*hlo.Value) *hlo.Value {
		x, y := a[0], a[1]
		if descending {
			x, y = y, x
		}
		less := rb.Compare(hlo.LT, x, y)
		if x.T.Elem.IsFloat() {
			xNaN := rb.Compare(hlo.NE, x, x)
			yNaN := rb.Compare(hlo.NE, y, y)
			less = rb.Or(less, rb.And(yNaN, rb.Not(xNaN)))
		}
		return less
	}
}

// sortWithIndices stably sorts x along dim and returns the sorted values and
// their int64 source indices.
func sortWithIndices(b *hlo.Builder, x *hlo.Value, dim int64, descending bool) (*hlo.Value, *hlo.Value) {
	idx := b.Iota(x.T.WithElem(hlo.S64), int(dim))
	outs := b.Sort(dim, sortLess(descending), x, idx)
	return outs[0], outs[1]
}

// sortRule is sort(self, dim, descending) and sort.stable(self, *, stable,
// dim, descending); the sort is always stable. dimIdx is where dim sits.
func sortRule(dimIdx int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		dim, err := wrapDim(c.Int(dimIdx, -1), m.Rank())
		if err != nil {
			return nil, err
		}
		if m.Rank() == 0 {
			return []*hlo.Value{c.T(0), c.B.ConstantInt(hlo.T(hlo.S64), 0)}, nil
		}
		v, i := sortWithIndices(c.B, c.T(0), dim, c.Bool(dimIdx+1, false))
		return []*hlo.Value{v, i}, nil
	}
}

// sliceDim takes positions [lo, hi) of x along dim.
func sliceDim(b *hlo.Builder, x *hlo.Value, dim, lo, hi int64) *hlo.Value {
	r := x.T.Rank()
	start, limit, strides := make([]int64, r), append([]int64{}, x.T.Shape...), make([]int64, r)
	for i := range strides {
		strides[i] = 1
	}
	start[dim], limit[dim] = lo, hi
	return b.Slice(x, start, limit, strides)
}

// topk is topk(self, k, dim, largest, sorted): the k largest (or smallest)
// elements along dim, in sorted order, with their indices.
func topk(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	k := c.Int(1, 0)
	dim, err := wrapDim(c.Int(2, -1), m.Rank())
	if err != nil {
		return nil, err
	}
	n := int64(1)
	if m.Rank() > 0 {
		n = m.Sizes[dim]
	}
	if k < 0 || k > n {
		return nil, Errorf("selected index k out of range")
	}
	if m.Rank() == 0 {
		return []*hlo.Value{c.T(0), c.B.ConstantInt(hlo.T(hlo.S64), 0)}, nil
	}
	v, i := sortWithIndices(c.B, c.T(0), dim, c.Bool(3, true))
	return []*hlo.Value{sliceDim(c.B, v, dim, 0, k), sliceDim(c.B, i, dim, 0, k)}, nil
}

// pickAt selects position pos (an int64 tensor of x's shape without dim)
// of sorted values v and indices i along dim.
func pickAt(b *hlo.Builder, v, i, pos *hlo.Value, dim int64) (*hlo.Value, *hlo.Value) {
	iota := b.Iota(i.T, int(dim))
	posB := b.BroadcastInDim(pos, i.T.Shape, keptMapping(i.T.Rank(), []int64{dim}))
	hit := b.Compare(hlo.EQ, iota, posB)
	e := v.T.Elem
	if e == hlo.Pred {
		v = b.Convert(v, hlo.S8)
	}
	low := b.BroadcastTo(b.Scalar(v.T.Elem, hlo.Lowest(v.T.Elem)), v.T.Shape)
	val := b.Reduce(b.Select(hit, v, low), b.Scalar(v.T.Elem, hlo.Lowest(v.T.Elem)), hlo.ReduceMax, dim)
	minus := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), -1), i.T.Shape)
	ind := b.Reduce(b.Select(hit, i, minus), b.ConstantInt(hlo.T(hlo.S64), -1), hlo.ReduceMax, dim)
	return b.Convert(val, e), ind
}

// constPos is a position tensor of the given shape holding p everywhere.
func constPos(b *hlo.Builder, shape []int64, p int64) *hlo.Value {
	return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), p), shape)
}

// kthvalue is kthvalue(self, k, dim, keepdim): the k-th smallest element
// along dim and its index.
func kthvalue(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	k := c.Int(1, 0)
	dim, err := wrapDim(c.Int(2, -1), m.Rank())
	if err != nil {
		return nil, err
	}
	n := int64(1)
	if m.Rank() > 0 {
		n = m.Sizes[dim]
	}
	if n == 0 && m.Rank() > 0 {
		return nil, IndexErrorf("kthvalue(): Expected reduction dim %d to have non-zero size.", dim)
	}
	if k < 1 || k > n {
		return nil, Errorf("kthvalue(): selected number k out of range for dimension %d", dim)
	}
	if m.Rank() == 0 {
		return []*hlo.Value{c.T(0), c.B.ConstantInt(hlo.T(hlo.S64), 0)}, nil
	}
	b := c.B
	v, i := sortWithIndices(b, c.T(0), dim, false)
	rest := append(append([]int64{}, m.Sizes[:dim]...), m.Sizes[dim+1:]...)
	val, ind := pickAt(b, v, i, constPos(b, rest, k-1), dim)
	keep := c.Bool(3, false)
	return []*hlo.Value{finish(b, val, m.Sizes, []int64{dim}, keep), finish(b, ind, m.Sizes, []int64{dim}, keep)}, nil
}

// medianAlong returns the median of x along dim with its index: the lower
// of the two middle elements. With ignoreNaN the NaNs are left out (all-NaN
// rows give NaN); otherwise a NaN makes the result that NaN.
func medianAlong(b *hlo.Builder, x *hlo.Value, dim int64, ignoreNaN bool) (*hlo.Value, *hlo.Value) {
	v, i := sortWithIndices(b, x, dim, false)
	n := x.T.Shape[dim]
	rest := append(append([]int64{}, x.T.Shape[:dim]...), x.T.Shape[dim+1:]...)
	pos := constPos(b, rest, (n-1)/2)
	if x.T.Elem.IsFloat() {
		nan := b.Convert(b.Compare(hlo.NE, x, x), hlo.S64)
		nans := b.Reduce(nan, b.ConstantInt(hlo.T(hlo.S64), 0), hlo.ReduceSum, dim)
		valid := b.Sub(constPos(b, rest, n), nans)
		if ignoreNaN {
			// (valid-1)/2 truncates toward zero, so no valid element picks position 0.
			pos = b.Div(b.Sub(valid, constPos(b, rest, 1)), constPos(b, rest, 2))
		} else {
			pos = b.Select(b.Compare(hlo.GT, nans, constPos(b, rest, 0)), valid, pos)
		}
	}
	return pickAt(b, v, i, pos, dim)
}

// medianDim is median.dim/nanmedian.dim(self, dim, keepdim) -> (values, indices).
func medianDim(name string, ignoreNaN bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		dim, err := wrapDim(c.Int(1, 0), m.Rank())
		if err != nil {
			return nil, err
		}
		if m.Rank() == 0 {
			return []*hlo.Value{c.T(0), c.B.ConstantInt(hlo.T(hlo.S64), 0)}, nil
		}
		if m.Sizes[dim] == 0 {
			return nil, IndexErrorf("%s(): Expected reduction dim %d to have non-zero size.", name, dim)
		}
		b := c.B
		v, i := medianAlong(b, c.T(0), dim, ignoreNaN)
		keep := c.Bool(2, false)
		return []*hlo.Value{finish(b, v, m.Sizes, []int64{dim}, keep), finish(b, i, m.Sizes, []int64{dim}, keep)}, nil
	}
}

// medianAll is median/nanmedian(self): the median of every element (NaN for
// an empty tensor).
func medianAll(ignoreNaN bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		b := c.B
		if m.Numel() == 0 {
			if !m.DType.IsFloat() {
				return nil, Errorf("median() input tensor cannot be empty")
			}
			return []*hlo.Value{b.Scalar(m.DType.Elem(), math.NaN())}, nil
		}
		flat := b.Reshape(c.T(0), m.Numel())
		v, _ := medianAlong(b, flat, 0, ignoreNaN)
		return []*hlo.Value{v}, nil
	}
}

// mode is mode(self, dim, keepdim): the most frequent value along dim (the
// smallest among equally frequent ones) and the last index it occurs at.
func mode(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	dim, err := wrapDim(c.Int(1, -1), m.Rank())
	if err != nil {
		return nil, err
	}
	if m.Rank() == 0 {
		return []*hlo.Value{c.T(0), c.B.ConstantInt(hlo.T(hlo.S64), 0)}, nil
	}
	n := m.Sizes[dim]
	if n == 0 {
		return nil, IndexErrorf("mode(): Expected reduction dim %d to have non-zero size.", dim)
	}
	b := c.B
	v, i := sortWithIndices(b, c.T(0), dim, false)
	pos := b.Iota(i.T, int(dim))
	// A run starts where a value differs from the one before it.
	prev := b.Concatenate(int(dim), sliceDim(b, v, dim, 0, 1), sliceDim(b, v, dim, 0, n-1))
	starts := b.Compare(hlo.NE, v, prev)
	zero := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 0), pos.T.Shape)
	startPos := b.Scan([]*hlo.Value{b.Select(starts, pos, zero)}, []*hlo.Value{b.ConstantInt(hlo.T(hlo.S64), 0)}, dim,
		binaryBody(func(rb *hlo.Builder, x, y *hlo.Value) *hlo.Value { return rb.Max(x, y) }))[0]
	// A run ends where the next value differs, or at the last position.
	next := b.Concatenate(int(dim), sliceDim(b, v, dim, 1, n), sliceDim(b, v, dim, n-1, n))
	ends := b.Compare(hlo.NE, v, next)
	last := b.Compare(hlo.EQ, pos, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), n-1), pos.T.Shape))
	ends = b.Or(ends, last)
	count := b.Add(b.Sub(pos, startPos), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 1), pos.T.Shape))
	count = b.Select(ends, count, zero)
	_, best := b.ReduceArg(count, pos, dim, hlo.GT)
	val, ind := pickAt(b, v, i, best, dim)
	keep := c.Bool(2, false)
	return []*hlo.Value{finish(b, val, m.Sizes, []int64{dim}, keep), finish(b, ind, m.Sizes, []int64{dim}, keep)}, nil
}

func init() {
	def("aten::sort", sortRule(1), "aten::sort.values")
	def("aten::sort.stable", sortRule(2), "aten::sort.values_stable")
	def("aten::topk", topk, "aten::topk.values")
	def("aten::kthvalue", kthvalue, "aten::kthvalue.values").OutNoOverlap = true
	def("aten::median", medianAll(false))
	def("aten::nanmedian", medianAll(true))
	def("aten::median.dim", medianDim("median", false), "aten::median.dim_values")
	def("aten::nanmedian.dim", medianDim("nanmedian", true), "aten::nanmedian.dim_values")
	def("aten::mode", mode, "aten::mode.values")
}
