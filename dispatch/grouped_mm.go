package dispatch

import "torchtpu/hlo"

// groupedMM is _grouped_mm(self, mat2, offs, bias, out_dtype): matrix
// products of groups, where offs (int32, the groups' cumulative ends) splits
// the dimension that a 2-D operand shares with the other:
//
//   - 2-D x 3-D: the rows of self, each row times its group's matrix of mat2;
//   - 3-D x 2-D: the columns of mat2, each column times its group's matrix of self;
//   - 2-D x 2-D: the contracted dimension, one product of each group's slice;
//   - 3-D x 3-D: no offs, a batched product.
//
// PyTorch's fallback slices the groups by offs read to the host, a sync per
// call that keeps a compiled graph from becoming a program. Here every group's
// product is computed densely and each row (column, slice) keeps its own
// group's with a select, so offs stays on the device. Rows past the last
// offset, which CUDA leaves unwritten, are zeros.
func groupedMM(c *Ctx) ([]*hlo.Value, error) {
	a, m2 := c.Meta(0), c.Meta(1)
	for i, m := range []TensorMeta{a, m2} {
		if m.DType != Float32 && m.DType != BFloat16 && m.DType != Float16 {
			return nil, Errorf("Expected mat_%c to be Float32, BFloat16 or Float16 matrix, got %s.", 'a'+i, scalarTypeName(m.DType))
		}
		if m.Rank() != 2 && m.Rank() != 3 {
			return nil, Errorf("Multiplicands must be 2D or 3D but got mat_a.dim()=%d and mat_b.dim()=%d", a.Rank(), m2.Rank())
		}
	}
	if a.DType != m2.DType {
		return nil, Errorf("Expected mat_a and mat_b to have the same dtype, got %s and %s", scalarTypeName(a.DType), scalarTypeName(m2.DType))
	}
	if c.Has(3) {
		return nil, Errorf("Bias tensor provided, but it is not supported yet.")
	}
	b, acc := c.B, accumElem(a.DType)
	// Half-precision operands go in as float32 (exact, and XLA:CPU has no
	// kernel for a half-precision dot accumulating in float32): each
	// product then sums in float32 and is rounded once, as CPU's are.
	x0, x1 := b.Convert(c.T(0), acc), b.Convert(c.T(1), acc)
	if a.Rank() == 3 && m2.Rank() == 3 {
		if c.Has(2) {
			return nil, Errorf("Offsets tensor provided, but is not needed for 3D/3D multiplicand layouts.")
		}
		if a.Sizes[0] != m2.Sizes[0] || a.Sizes[2] != m2.Sizes[1] {
			return nil, Errorf("grouped_mm: batched operands %s and %s do not match", shapeString(a.Sizes), shapeString(m2.Sizes))
		}
		prod := b.DotGeneral(x0, x1, []int64{0}, []int64{0}, []int64{2}, []int64{1})
		return []*hlo.Value{b.Convert(prod, a.DType.Elem())}, nil
	}
	if !c.Has(2) {
		return nil, Errorf("Offsets tensor not provided, but is needed for %dD/%dD multiplicand layouts.", a.Rank(), m2.Rank())
	}
	offs := c.Meta(2)
	if offs.Rank() != 1 || offs.DType != Int32 {
		return nil, Errorf("Offsets tensor must be a 1D integer (int32) tensor, got %s %s.", scalarTypeName(offs.DType), shapeString(offs.Sizes))
	}
	g := offs.Sizes[0]
	// group[i] of n positions is how many groups end at or before i: its
	// group, or g past the last end.
	group := func(n int64) *hlo.Value {
		ends := b.BroadcastInDim(b.Convert(c.T(2), hlo.S64), []int64{g, n}, []int64{0})
		at := b.Iota(hlo.T(hlo.S64, g, n), 1)
		past := b.Convert(b.Compare(hlo.LE, ends, at), hlo.S64)
		return b.Reduce(past, b.Scalar(hlo.S64, 0), hlo.ReduceSum, 0)
	}
	// member is (g, n): whether position i belongs to group j.
	member := func(n int64) *hlo.Value {
		return b.Compare(hlo.EQ, b.BroadcastInDim(group(n), []int64{g, n}, []int64{1}), b.Iota(hlo.T(hlo.S64, g, n), 0))
	}
	// pick sums prod over dim d where keep holds: one group's product each.
	pick := func(prod, keep *hlo.Value, d int64) *hlo.Value {
		zero := b.BroadcastTo(b.Scalar(acc, 0), prod.T.Shape)
		return b.Convert(b.Reduce(b.Select(keep, prod, zero), b.Scalar(acc, 0), hlo.ReduceSum, d), a.DType.Elem())
	}
	switch {
	case a.Rank() == 2 && m2.Rank() == 3: // (s, k) x (g, k, n) -> (s, n)
		s, n := a.Sizes[0], m2.Sizes[2]
		if m2.Sizes[0] != g || a.Sizes[1] != m2.Sizes[1] {
			return nil, Errorf("grouped_mm: %s x %s with %d offsets: sizes do not match", shapeString(a.Sizes), shapeString(m2.Sizes), g)
		}
		prod := b.DotGeneral(x0, x1, nil, nil, []int64{1}, []int64{1}) // (s, g, n)
		keep := b.BroadcastInDim(member(s), []int64{s, g, n}, []int64{1, 0})
		return []*hlo.Value{pick(prod, keep, 1)}, nil
	case a.Rank() == 3 && m2.Rank() == 2: // (g, m, k) x (k, n) -> (m, n)
		m, n := a.Sizes[1], m2.Sizes[1]
		if a.Sizes[0] != g || a.Sizes[2] != m2.Sizes[0] {
			return nil, Errorf("grouped_mm: %s x %s with %d offsets: sizes do not match", shapeString(a.Sizes), shapeString(m2.Sizes), g)
		}
		prod := b.DotGeneral(x0, x1, nil, nil, []int64{2}, []int64{0}) // (g, m, n)
		keep := b.BroadcastInDim(member(n), []int64{g, m, n}, []int64{0, 2})
		return []*hlo.Value{pick(prod, keep, 0)}, nil
	default: // (m, k) x (k, n) -> (g, m, n), each group its slice of k
		m, k, n := a.Sizes[0], a.Sizes[1], m2.Sizes[1]
		if m2.Sizes[0] != k {
			return nil, Errorf("grouped_mm: %s x %s: contraction sizes do not match", shapeString(a.Sizes), shapeString(m2.Sizes))
		}
		// Both operands are masked, so that a product outside a group is
		// 0 * 0 and an infinite element elsewhere makes no NaN.
		in := member(k)
		zero := b.Scalar(acc, 0)
		x := b.Select(b.BroadcastInDim(in, []int64{g, m, k}, []int64{0, 2}),
			b.BroadcastInDim(x0, []int64{g, m, k}, []int64{1, 2}), b.BroadcastTo(zero, []int64{g, m, k}))
		y := b.Select(b.BroadcastInDim(in, []int64{g, k, n}, []int64{0, 1}),
			b.BroadcastInDim(x1, []int64{g, k, n}, []int64{1, 2}), b.BroadcastTo(zero, []int64{g, k, n}))
		prod := b.DotGeneral(x, y, []int64{0}, []int64{0}, []int64{2}, []int64{1}) // (g, m, n)
		return []*hlo.Value{b.Convert(prod, a.DType.Elem())}, nil
	}
}

func init() {
	def("aten::_grouped_mm", groupedMM)
}
