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

func init() {
	def("aten::linalg_vector_norm", vectorNorm)
}
