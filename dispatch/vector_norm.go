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
	if !m.DType.IsFloat() {
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
	b := c.B
	acc := accumElem(d)
	x := b.Abs(b.Convert(c.T(0), acc))
	var r *hlo.Value
	sum := func(v *hlo.Value) *hlo.Value { return b.Reduce(v, b.Scalar(acc, 0), hlo.ReduceSum, dims...) }
	switch {
	case ord == 2:
		r = b.Sqrt(sum(b.Mul(x, x)))
	case ord == 1:
		r = sum(x)
	case math.IsInf(ord, 1):
		r = b.Reduce(x, b.Scalar(acc, 0), hlo.ReduceMax, dims...)
	case math.IsInf(ord, -1):
		r = b.Reduce(x, b.Scalar(acc, math.Inf(1)), hlo.ReduceMin, dims...)
	case ord == 0:
		nz := b.Convert(b.Compare(hlo.NE, x, b.BroadcastTo(b.Scalar(acc, 0), x.T.Shape)), acc)
		r = sum(nz)
	default:
		p := c.R.Scalar(ord, acc)
		s := sum(b.Pow(x, b.BroadcastTo(p, x.T.Shape)))
		r = b.Pow(s, b.BroadcastTo(b.Div(b.Scalar(acc, 1), p), s.T.Shape))
	}
	r = finish(b, r, m.Sizes, dims, c.Bool(3, false))
	return []*hlo.Value{b.Convert(r, d.Elem())}, nil
}

func init() {
	def("aten::linalg_vector_norm", vectorNorm)
}
