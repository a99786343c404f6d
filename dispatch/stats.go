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

// normRule is the norm overloads (self, p, [dim, keepdim], [dtype]); an
// absent index is -1. p None means 2.
func normRule(dimIdx, keepIdx, dtypeIdx int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if !m.DType.IsFloat() {
			return nil, Errorf("norm(): input dtype should be either floating point or complex. Got %s instead.", scalarTypeName(m.DType))
		}
		d := m.DType
		if dtypeIdx >= 0 {
			var err error
			if d, err = c.DTypeArg(dtypeIdx, d); err != nil {
				return nil, err
			}
		}
		dims, keep := iotaDims(m.Rank()), false
		if dimIdx >= 0 {
			var err error
			if dims, _, err = c.reduceDims(dimIdx, m.Rank(), true); err != nil {
				return nil, err
			}
			keep = c.Bool(keepIdx, false)
		}
		acc := accumElem(d)
		r := pNorm(c, c.B.Convert(c.T(0), acc), c.Float(1, 2), dims)
		return []*hlo.Value{c.B.Convert(finish(c.B, r, m.Sizes, dims, keep), d.Elem())}, nil
	}
}

// renorm is renorm(self, p, dim, maxnorm): each slice along dim whose p-norm
// exceeds maxnorm is scaled down to norm maxnorm.
func renorm(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() {
		return nil, Errorf("renorm: Expected a floating point or complex tensor as input. Got %s", m.DType)
	}
	p := c.Float(1, 2)
	if p <= 0 {
		return nil, Errorf("renorm: non-positive-norm not supported")
	}
	if c.Float(3, 0) < 0 {
		return nil, Errorf("renorm: expected maxnorm to be >= 0 but got %g", c.Float(3, 0))
	}
	if m.Rank() < 2 {
		return nil, Errorf("renorm: input needs at least 2 dimensions, got %d dimensions", m.Rank())
	}
	dim, err := wrapDim(c.Int(2, 0), m.Rank())
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(m.DType)
	x := b.Convert(c.T(0), acc)
	if m.Rank() == 0 {
		x = b.Reshape(x, 1)
	}
	var others []int64
	for i := 0; i < x.T.Rank(); i++ {
		if int64(i) != dim {
			others = append(others, int64(i))
		}
	}
	norm := pNorm(c, x, p, others)
	maxnorm := b.BroadcastTo(c.R.Scalar(c.Float(3, 0), acc), norm.T.Shape)
	eps := b.BroadcastTo(b.Scalar(acc, 1e-7), norm.T.Shape)
	one := b.BroadcastTo(b.Scalar(acc, 1), norm.T.Shape)
	factor := b.Select(b.Compare(hlo.GT, norm, maxnorm), b.Div(maxnorm, b.Add(norm, eps)), one)
	y := b.Mul(x, b.BroadcastInDim(factor, x.T.Shape, []int64{dim}))
	return []*hlo.Value{b.Reshape(b.Convert(y, m.DType.Elem()), m.Sizes...)}, nil
}

// histc is histc(self, bins, min, max): a histogram of bins equal-width bins
// over [min, max] (the data's range when min == max); elements outside it
// are ignored.
func histc(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() {
		return nil, Errorf("\"histogram_cpu\" not implemented for '%s'", scalarTypeName(m.DType))
	}
	bins := c.Int(1, 100)
	if bins <= 0 {
		return nil, Errorf("torch.histc(): bins must be > 0, but got %d for dimension 0", bins)
	}
	lo, hi := c.Float(2, 0), c.Float(3, 0)
	if lo > hi {
		return nil, Errorf("torch.histc(): max must be larger than min")
	}
	b := c.B
	acc := accumElem(m.DType)
	n := m.Numel()
	x := b.Reshape(b.Convert(c.T(0), acc), n)
	loV, hiV := c.R.Scalar(lo, acc), c.R.Scalar(hi, acc)
	if lo == hi {
		if n > 0 {
			loV = b.Reduce(x, b.Scalar(acc, hlo.Highest(acc)), hlo.ReduceMin, 0)
			hiV = b.Reduce(x, b.Scalar(acc, hlo.Lowest(acc)), hlo.ReduceMax, 0)
		}
		same := b.Compare(hlo.EQ, loV, hiV)
		loV = b.Select(same, b.Sub(loV, b.Scalar(acc, 1)), loV)
		hiV = b.Select(same, b.Add(hiV, b.Scalar(acc, 1)), hiV)
	}
	bc := func(v *hlo.Value) *hlo.Value { return b.BroadcastTo(v, []int64{n}) }
	pos := b.Div(b.Mul(b.Sub(x, bc(loV)), bc(b.Scalar(acc, float64(bins)))), bc(b.Sub(hiV, loV)))
	idx := b.Convert(b.Floor(pos), hlo.S64)
	idx = b.Select(b.Compare(hlo.EQ, x, bc(hiV)), bc(b.ConstantInt(hlo.T(hlo.S64), bins-1)), idx)
	inside := b.And(b.Compare(hlo.GE, x, bc(loV)), b.Compare(hlo.LE, x, bc(hiV)))
	idx = b.Select(inside, idx, bc(b.ConstantInt(hlo.T(hlo.S64), -1)))
	hit := b.Compare(hlo.EQ, b.BroadcastInDim(idx, []int64{n, bins}, []int64{0}), b.Iota(hlo.T(hlo.S64, n, bins), 1))
	counts := b.Reduce(b.Convert(hit, acc), b.Scalar(acc, 0), hlo.ReduceSum, 0)
	return []*hlo.Value{b.Convert(counts, m.DType.Elem())}, nil
}

func init() {
	def("aten::nansum", nansum)
	def("aten::var_mean.correction", varMean(false), "aten::var_mean.correction_out")
	def("aten::std_mean.correction", varMean(true), "aten::std_mean.correction_out")
	def("aten::aminmax", aminmax)
	def("aten::count_nonzero.dim_IntList", countNonzero(true), "aten::count_nonzero.dim_IntList_out")
	def("aten::count_nonzero", countNonzero(false))
	def("aten::norm.Scalar", normRule(-1, -1, -1), "aten::norm.Scalar_out")
	def("aten::norm.ScalarOpt_dim", normRule(2, 3, -1), "aten::norm.out")
	def("aten::norm.ScalarOpt_dim_dtype", normRule(2, 3, 4), "aten::norm.dtype_out")
	def("aten::norm.ScalarOpt_dtype", normRule(-1, -1, 2), "aten::norm.ScalarOpt_dtype_out")
	def("aten::renorm", renorm)
	def("aten::histc", histc)
}
