package dispatch

import (
	"torchtpu/hlo"
)

// nansum is nansum(self, dim, keepdim, *, dtype): sum treating NaN as zero.
func nansum(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	d, err := c.sumDType(m.DType, 3)
	if err != nil {
		return nil, err
	}
	dims, keep, err := c.resolveDims(1, 2, false, m.Rank())
	if err != nil {
		return nil, err
	}
	b := c.B
	x := b.Convert(c.T(0), d.Elem())
	if d.IsFloat() {
		x = b.Select(b.Compare(hlo.NE, x, x), b.BroadcastTo(b.Scalar(d.Elem(), 0), x.T.Shape), x)
	}
	return []*hlo.Value{finish(b, sumProd(b, x, d, dims, false), m.Sizes, dims, keep)}, nil
}

// varMean is var_mean/std_mean.correction(self, dim, *, correction,
// keepdim) -> (var or std, mean).
func varMean(isStd bool) Fn {
	v := varRule(isStd, 1, -1, 2, 3)
	return func(c *Ctx) ([]*hlo.Value, error) {
		r, err := v(c)
		if err != nil {
			return nil, err
		}
		m := c.Meta(0)
		dims, keep, err := c.resolveDims(1, 3, false, m.Rank())
		if err != nil {
			return nil, err
		}
		mn := meanOf(c.B, c.T(0), m.Sizes, dims)
		return []*hlo.Value{r[0], finish(c.B, c.B.Convert(mn, m.DType.Elem()), m.Sizes, dims, keep)}, nil
	}
}

// aminmax is aminmax(self, *, dim, keepdim) -> (min, max).
func aminmax(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.DType.IsComplex() {
		return nil, TypeErrorf("aminmax not implemented for %s", scalarTypeName(m.DType))
	}
	dims, all := iotaDims(m.Rank()), true
	keep := c.Bool(2, false)
	if c.Has(1) {
		var err error
		if dims, keep, err = c.resolveDims(1, 2, true, m.Rank()); err != nil {
			return nil, err
		}
		all = false
	}
	if all && m.Numel() == 0 {
		return nil, Errorf("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
	}
	if err := checkNonEmpty("aminmax", m, dims, all); err != nil {
		return nil, err
	}
	b, x := c.B, c.T(0)
	lo := finish(b, extreme(b, x, dims, false), m.Sizes, dims, keep)
	hi := finish(b, extreme(b, x, dims, true), m.Sizes, dims, keep)
	return []*hlo.Value{lo, hi}, nil
}

// countNonzero is count_nonzero(self, dim) for a dim list or an optional dim.
func countNonzero(list bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		var dims []int64
		var err error
		if list {
			dims, _, err = c.reduceDims(1, m.Rank(), true)
		} else if c.Has(1) {
			dims, _, err = c.resolveDims(1, 2, true, m.Rank())
		} else {
			dims = iotaDims(m.Rank())
		}
		if err != nil {
			return nil, err
		}
		b, x := c.B, c.T(0)
		nz := b.Convert(b.Compare(hlo.NE, x, b.BroadcastTo(b.Scalar(x.T.Elem, 0), x.T.Shape)), hlo.S64)
		return []*hlo.Value{b.Reduce(nz, b.ConstantInt(hlo.T(hlo.S64), 0), hlo.ReduceSum, dims...)}, nil
	}
}

func init() {
	def("aten::nansum", nansum)
	def("aten::var_mean.correction", varMean(false), "aten::var_mean.correction_out")
	def("aten::std_mean.correction", varMean(true), "aten::std_mean.correction_out")
	def("aten::aminmax", aminmax).OutsApart = "aminmax(): the `min` and `max` out= tensors must not overlap."
	def("aten::count_nonzero.dim_IntList", countNonzero(true), "aten::count_nonzero.dim_IntList_out")
	def("aten::count_nonzero", countNonzero(false))
}
