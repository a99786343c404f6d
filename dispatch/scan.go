package dispatch

import (
	"math"
	"strings"

	"torchtpu/hlo"
)

// scanDim wraps the dim argument i of a scan over a tensor of rank rank; a
// zero-dimensional tensor scans nothing (ok is false).
func (c *Ctx) scanDim(i int, rank int) (dim int64, ok bool, err error) {
	d, err := wrapDim(c.Int(i, 0), rank)
	if err != nil {
		return 0, false, err
	}
	return d, rank > 0, nil
}

// binaryBody is a scan body that combines one operand with a binary op.
func binaryBody(f func(rb *hlo.Builder, x, y *hlo.Value) *hlo.Value) func(rb *hlo.Builder, a []*hlo.Value) []*hlo.Value {
	return func(rb *hlo.Builder, a []*hlo.Value) []*hlo.Value { return []*hlo.Value{f(rb, a[0], a[1])} }
}

// cumRule is cumsum/cumprod(self, dim, *, dtype): the running sum or product
// along dim, accumulated in float32 at least for half types; integer and
// bool inputs give int64 unless dtype says otherwise.
func cumRule(mul bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		d, err := c.sumDType(m.DType, 2)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(c.Op, ".out") && !c.Has(2) {
			// CPU's out= kernel scans in the out tensor's dtype.
			d = c.Args[len(c.Args)-1].Tensors[0].DType
		}
		dim, ok, err := c.scanDim(1, m.Rank())
		if err != nil {
			return nil, err
		}
		b := c.B
		acc := cpuAccElem(d)
		if acc == hlo.Pred {
			acc = hlo.S64
		}
		x := b.Convert(b.Convert(c.T(0), d.Elem()), acc)
		if !ok {
			return []*hlo.Value{b.Convert(x, d.Elem())}, nil
		}
		init, body := b.Scalar(acc, 0), binaryBody((*hlo.Builder).Add)
		if mul {
			init, body = b.Scalar(acc, 1), binaryBody((*hlo.Builder).Mul)
		}
		r := b.Scan([]*hlo.Value{x}, []*hlo.Value{init}, dim, body)[0]
		return []*hlo.Value{b.Convert(r, d.Elem())}, nil
	}
}

// logAddExp combines two scalars as log(exp(x) + exp(y)) without overflow;
// two -inf give -inf and NaN propagates.
func logAddExp(rb *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	hi := rb.Max(x, y)
	lo := rb.Min(x, y)
	r := rb.Add(hi, rb.Log1p(rb.Exp(rb.Sub(lo, hi))))
	ninf := rb.Constant(x.T, hlo.Lowest(x.T.Elem))
	// Two equal infinities give that infinity (inf - inf would be NaN), as CPU's helper does.
	sameInf := rb.And(rb.Compare(hlo.EQ, lo, hi), rb.Not(rb.IsFinite(hi)))
	return rb.Select(rb.Or(rb.Compare(hlo.EQ, hi, ninf), sameInf), hi, r)
}

// logcumsumexp is _logcumsumexp(self, dim): log of the running sum of exp.
func logcumsumexp(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() && !m.DType.IsComplex() {
		return nil, Errorf("logcumsumexp(): expected input to have floating point or complex dtype but got %s", scalarTypeName(m.DType))
	}
	dim, ok, err := c.scanDim(1, m.Rank())
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(m.DType)
	x := b.Convert(c.T(0), acc)
	if ok && m.DType.IsComplex() {
		// Complex values combine by CPU's complex log-add-exp, from -inf + 0i.
		x = b.Scan([]*hlo.Value{x}, []*hlo.Value{b.Scalar(acc, math.Inf(-1))}, dim, binaryBody(complexLogaddexp))[0]
	} else if ok {
		x = b.Scan([]*hlo.Value{x}, []*hlo.Value{b.Scalar(acc, hlo.Lowest(acc))}, dim, binaryBody(logAddExp))[0]
	}
	return []*hlo.Value{b.Convert(x, m.DType.Elem())}, nil
}

// cumExtreme returns the running max (or min) of x along dim with the index
// of the element it came from: among equal values the later index wins, and
// a NaN wins over everything, as in PyTorch's cummax/cummin. It is two
// one-operand scans, the running value and then the running latest index
// where x reached it (x equals the running value exactly where the running
// value was taken from x): XLA:CPU miscompiles a two-operand scan of a value
// and an index once the dimension is long (100 elements).
func cumExtreme(b *hlo.Builder, x *hlo.Value, dim int64, isMax bool) (*hlo.Value, *hlo.Value) {
	e := x.T.Elem
	idx := b.Iota(x.T.WithElem(hlo.S64), int(dim))
	if e == hlo.Pred {
		x = b.Convert(x, hlo.S8)
	}
	xe := x.T.Elem
	pick, init := (*hlo.Builder).Max, hlo.Lowest(xe)
	if !isMax {
		pick, init = (*hlo.Builder).Min, hlo.Highest(xe)
	}
	body := func(rb *hlo.Builder, a, c *hlo.Value) *hlo.Value {
		r := pick(rb, a, c)
		if xe.IsFloat() {
			r = rb.Select(rb.Compare(hlo.NE, c, c), c, rb.Select(rb.Compare(hlo.NE, a, a), a, r))
		}
		return r
	}
	v := b.Scan([]*hlo.Value{x}, []*hlo.Value{b.Scalar(xe, init)}, dim, binaryBody(body))[0]
	hit := b.Compare(hlo.EQ, x, v)
	if xe.IsFloat() {
		hit = b.Or(hit, b.And(b.Compare(hlo.NE, x, x), b.Compare(hlo.NE, v, v)))
	}
	cand := b.Select(hit, idx, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), -1), idx.T.Shape))
	i := b.Scan([]*hlo.Value{cand}, []*hlo.Value{b.ConstantInt(hlo.T(hlo.S64), -1)}, dim, binaryBody((*hlo.Builder).Max))[0]
	return b.Convert(v, e), i
}

// cumExtremeHelper is _cummax_helper/_cummin_helper(self, values, indices,
// dim): it writes the running extreme and its indices into values and indices.
func cumExtremeHelper(isMax bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		dim, ok, err := c.scanDim(3, m.Rank())
		if err != nil {
			return nil, err
		}
		v, i := c.T(0), c.B.ConstantInt(hlo.T(hlo.S64), 0)
		if ok {
			v, i = cumExtreme(c.B, v, dim, isMax)
		}
		c.WriteArg(1, 0, c.B.Convert(v, c.Meta(1).DType.Elem()))
		c.WriteArg(2, 0, c.B.Convert(i, c.Meta(2).DType.Elem()))
		return nil, nil
	}
}

// cumExtremeRule is cummax/cummin(self, dim) -> (values, indices).
func cumExtremeRule(isMax bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		dim, ok, err := c.scanDim(1, m.Rank())
		if err != nil {
			return nil, err
		}
		if !ok {
			return []*hlo.Value{c.T(0), c.B.ConstantInt(hlo.T(hlo.S64), 0)}, nil
		}
		v, i := cumExtreme(c.B, c.T(0), dim, isMax)
		return []*hlo.Value{v, i}, nil
	}
}

func init() {
	def("aten::cumsum", cumRule(false)).Range = cumsumRange
	def("aten::cumprod", cumRule(true))
	def("aten::_logcumsumexp", logcumsumexp)
	def("aten::_cummax_helper", cumExtremeHelper(true), "")
	def("aten::_cummin_helper", cumExtremeHelper(false), "")
	def("aten::cummax", cumExtremeRule(true))
	def("aten::cummin", cumExtremeRule(false))
}
