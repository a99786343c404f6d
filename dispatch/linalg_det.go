package dispatch

import (
	"torchtpu/hlo"
)

// detParts returns, from an LU factorization of square matrices, the sign
// of the row permutation (+1 or -1, element e) and the diagonal of U.
func detParts(b *hlo.Builder, f luResult, e hlo.Elem) (*hlo.Value, *hlo.Value) {
	r := f.Pivots.T.Rank()
	want := b.Add(b.Iota(f.Pivots.T, r-1), b.ConstantInt(f.Pivots.T, 1))
	swapped := b.Select(b.Compare(hlo.NE, f.Pivots, want), b.ConstantInt(f.Pivots.T, 1), b.ConstantInt(f.Pivots.T, 0))
	count := b.Reduce(swapped, b.ConstantInt(hlo.T(hlo.S32), 0), hlo.ReduceSum, int64(r-1))
	odd := b.Compare(hlo.EQ, b.Rem(count, b.ConstantInt(count.T, 2)), b.ConstantInt(count.T, 1))
	t := hlo.T(e, count.T.Shape...)
	sign := b.Select(odd, b.Constant(t, -1), b.Constant(t, 1))
	return sign, luDiag(b, f.LU)
}

// detFactor factors A^T when A is contiguous (it is A's column-major copy)
// and A otherwise, as PyTorch's det and slogdet do: their backward picks the
// adjoint of its solve by the same test, so the factors must agree with it.
func detFactor(c *Ctx) luResult {
	a := c.T(0)
	if argContiguous(c, 0) {
		a = luMT(c.B, a)
	}
	return luFactor(c.B, a)
}

// argContiguous reports whether tensor argument i is contiguous in
// PyTorch's sense (row-major strides for every dimension of size > 1); a
// tensor whose strides are unknown counts as contiguous.
func argContiguous(c *Ctx, i int) bool {
	m := c.Meta(i)
	if len(m.Strides) != len(m.Sizes) || numel(m.Sizes) == 0 {
		return true
	}
	want := int64(1)
	for d := len(m.Sizes) - 1; d >= 0; d-- {
		if m.Sizes[d] != 1 && m.Strides[d] != want {
			return false
		}
		want *= m.Sizes[d]
	}
	return true
}

// detCheck checks a determinant's input.
func detCheck(fn, kernel string, m TensorMeta) error {
	if err := luSquareCheck(fn, m, "A"); err != nil {
		return err
	}
	return luDTypeCheck(fn, kernel, false, m)
}

// linalgDet is _linalg_det(A) -> (result, LU, pivots).
func linalgDet(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := detCheck("linalg.det", "lu_cpu", m); err != nil {
		return nil, err
	}
	e := m.DType.Elem()
	f := detFactor(c)
	sign, d := detParts(c.B, f, e)
	prod := c.B.Reduce(d, c.B.Constant(hlo.T(e), 1), hlo.ReduceMul, int64(d.T.Rank()-1))
	return []*hlo.Value{c.B.Mul(sign, prod), f.LU, f.Pivots}, nil
}

// linalgSlogdet is _linalg_slogdet(A) -> (sign, logabsdet, LU, pivots).
func linalgSlogdet(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := detCheck("linalg.slogdet", "", m); err != nil {
		return nil, err
	}
	e := m.DType.Elem()
	f := detFactor(c)
	sign, d := detParts(c.B, f, e)
	last := int64(d.T.Rank() - 1)
	dsign := c.B.Reduce(c.B.Sign(d), c.B.Constant(hlo.T(e), 1), hlo.ReduceMul, last)
	logabs := c.B.Reduce(c.B.Log(c.B.Abs(d)), c.B.Constant(hlo.T(e), 0), hlo.ReduceSum, last)
	return []*hlo.Value{c.B.Mul(sign, dsign), logabs, f.LU, f.Pivots}, nil
}

func init() {
	def("aten::_linalg_det", linalgDet, "aten::_linalg_det.result")
	def("aten::_linalg_slogdet", linalgSlogdet, "aten::_linalg_slogdet.sign")
}
