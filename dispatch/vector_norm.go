package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// vectorNorm is linalg_vector_norm(self, ord, dim, keepdim, *, dtype): the
// ord-norm of self over dim (all dims when absent), computed in float32 for
// half types. ord 2, 1, inf, -inf and 0 have their own lowering; other ords
// use sum(|x|^ord)^(1/ord).
func vectorNorm(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() && !m.DType.IsComplex() {
		return nil, Errorf("linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s", m.DType)
	}
	d, err := c.DTypeArg(4, m.DType)
	if err != nil {
		return nil, err
	}
	switch {
	case m.DType.IsComplex() && !d.IsComplex():
		return nil, Errorf("linalg.vector_norm: dtype should be complex for complex inputs, but got %s", scalarTypeName(d))
	case !m.DType.IsComplex() && d.IsComplex():
		return nil, Errorf("linalg.vector_norm: dtype should be real for real inputs, but got %s", scalarTypeName(d))
	case PromoteTypes(m.DType, d) != d:
		return nil, Errorf("linalg.vector_norm: the dtype of the input (%s) should be convertible without narrowing to the specified dtype (%s)", scalarTypeName(m.DType), scalarTypeName(d))
	}
	ord := c.Float(1, 2)
	dims, _, err := c.reduceDims(2, m.Rank(), true)
	if err != nil {
		return nil, err
	}
	if ord < 0 || math.IsInf(ord, 1) {
		for _, dd := range dims {
			if m.Rank() > 0 && m.Sizes[dd] == 0 {
				return nil, Errorf("linalg.vector_norm cannot compute the %g norm on an empty tensor because the operation does not have an identity", ord)
			}
		}
	}
	x := c.T(0)
	if m.DType.IsComplex() {
		// The norm of a complex tensor is the norm of its magnitudes, a real result.
		x = c.B.Abs(c.B.Convert(x, d.Elem()))
		d = d.ToReal()
	}
	acc := accumElem(d)
	r := pNorm(c, c.B.Convert(x, acc), ord, dims)
	b := c.B
	r = finish(b, r, m.Sizes, dims, c.Bool(3, false))
	return []*hlo.Value{b.Convert(r, d.Elem())}, nil
}

// pNorm is the ord-norm of float x over dims, in x's element type.
func pNorm(c *Ctx, x *hlo.Value, ord float64, dims []int64) *hlo.Value {
	b := c.B
	acc := x.T.Elem
	x = b.Abs(x)
	sum := func(v *hlo.Value) *hlo.Value { return b.Reduce(v, b.Scalar(acc, 0), hlo.ReduceSum, dims...) }
	switch {
	case ord == 2:
		return b.Sqrt(sum(b.Mul(x, x)))
	case ord == 1:
		return sum(x)
	case math.IsInf(ord, 1):
		return b.Reduce(x, b.Scalar(acc, 0), hlo.ReduceMax, dims...)
	case math.IsInf(ord, -1):
		return b.Reduce(x, b.Scalar(acc, math.Inf(1)), hlo.ReduceMin, dims...)
	case ord == 0:
		return sum(b.Convert(b.Compare(hlo.NE, x, b.BroadcastTo(b.Scalar(acc, 0), x.T.Shape)), acc))
	}
	p := c.R.Scalar(ord, acc)
	s := sum(b.Pow(x, b.BroadcastTo(p, x.T.Shape)))
	return b.Pow(s, b.BroadcastTo(b.Div(b.Scalar(acc, 1), p), s.T.Shape))
}

// normRule is the norm overloads (self, p, [dim, keepdim], [dtype]); an
// absent index is -1. p None means 2.
func normRule(dimIdx, keepIdx, dtypeIdx int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if !m.DType.IsFloat() && !m.DType.IsComplex() {
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
		x := c.T(0)
		if m.DType.IsComplex() {
			// The norm of a complex tensor is the norm of its magnitudes, a real result.
			x = c.B.Abs(c.B.Convert(x, d.Elem()))
			d = d.ToReal()
		}
		acc := accumElem(d)
		r := pNorm(c, c.B.Convert(x, acc), c.Float(1, 2), dims)
		return []*hlo.Value{c.B.Convert(finish(c.B, r, m.Sizes, dims, keep), d.Elem())}, nil
	}
}

// renorm is renorm(self, p, dim, maxnorm): each slice along dim whose p-norm
// exceeds maxnorm is scaled down to norm maxnorm.
func renorm(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() && !m.DType.IsComplex() {
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
	// A complex slice's norm is that of its magnitudes; the real factor scales both parts.
	norm := pNorm(c, b.Abs(x), p, others)
	racc := acc.Real()
	maxnorm := b.BroadcastTo(c.R.Scalar(c.Float(3, 0), racc), norm.T.Shape)
	eps := b.BroadcastTo(b.Scalar(racc, 1e-7), norm.T.Shape)
	one := b.BroadcastTo(b.Scalar(racc, 1), norm.T.Shape)
	factor := b.Select(b.Compare(hlo.GT, norm, maxnorm), b.Div(maxnorm, b.Add(norm, eps)), one)
	y := b.Mul(x, b.Convert(b.BroadcastInDim(factor, x.T.Shape, []int64{dim}), acc))
	return []*hlo.Value{b.Reshape(b.Convert(y, m.DType.Elem()), m.Sizes...)}, nil
}

func init() {
	def("aten::linalg_vector_norm", vectorNorm)
	def("aten::norm.Scalar", normRule(-1, -1, -1), "aten::norm.Scalar_out")
	def("aten::norm.ScalarOpt_dim", normRule(2, 3, -1), "aten::norm.out")
	def("aten::norm.ScalarOpt_dim_dtype", normRule(2, 3, 4), "aten::norm.dtype_out")
	def("aten::norm.ScalarOpt_dtype", normRule(-1, -1, 2), "aten::norm.ScalarOpt_dtype_out")
	def("aten::renorm", renorm)
}
