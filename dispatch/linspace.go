package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// evenSteps returns n evenly spaced values from start to end as CPU's
// linspace kernel forms them: floating results compute in their own type
// (half types in float32) from the first value for the first half of the
// indices and from the last value for the second half; integer results
// compute in float64 and truncate. start and end are runtime inputs, so a
// new range compiles nothing new.
func evenSteps(c *Ctx, start, end float64, n int64, d DType) *hlo.Value {
	b := c.B
	acc := Float64
	if d.IsFloat() && d != Float64 {
		acc = Float32
		start, end = float64(float32(start)), float64(float32(end))
	}
	if !d.IsFloat() {
		start, end = math.Trunc(start), math.Trunc(end)
	}
	e := acc.Elem()
	t := hlo.T(e, n)
	s := b.BroadcastTo(c.R.Scalar(start, e), []int64{n})
	last := b.BroadcastTo(c.R.Scalar(end, e), []int64{n})
	step := b.BroadcastTo(b.Scalar(e, 0), []int64{n})
	if n > 1 {
		// A runtime divisor: XLA turns division by a constant into a product with its reciprocal, and
		// 999999 * (1/999999) is not 1.
		step = b.Div(b.Sub(last, s), b.BroadcastTo(c.R.Scalar(float64(n-1), e), []int64{n}))
	}
	i := b.Iota(t, 0)
	fromStart := b.Add(s, b.Mul(step, i))
	fromEnd := b.Sub(last, b.Mul(step, b.Sub(b.Constant(t, float64(n-1)), i)))
	if n == 1 {
		return s
	}
	first := b.Compare(hlo.LT, b.Iota(hlo.T(hlo.S64, n), 0), b.ConstantInt(hlo.T(hlo.S64, n), n/2))
	return b.Select(first, fromStart, fromEnd)
}

// linspaceOut is linspace.out(start, end, steps, *, out).
func linspaceOut(c *Ctx) ([]*hlo.Value, error) {
	n, d := c.Int(2, 0), c.Meta(3).DType
	if n < 0 {
		return nil, Errorf("number of steps must be non-negative")
	}
	if d.IsComplex() {
		return nil, ErrRunOnCPU
	}
	v := evenSteps(c, c.Float(0, 0), c.Float(1, 0), n, d)
	return []*hlo.Value{c.B.Convert(v, d.Elem())}, nil
}

// logspaceOut is logspace.out(start, end, steps, base, *, out): base raised
// to linspace(start, end, steps); integer results truncate start and end and
// compute in float64, as CPU does.
func logspaceOut(c *Ctx) ([]*hlo.Value, error) {
	n, d := c.Int(2, 0), c.Meta(4).DType
	if n < 0 {
		return nil, Errorf("number of steps must be non-negative")
	}
	if d.IsComplex() {
		return nil, ErrRunOnCPU
	}
	b := c.B
	start, end, ed := c.Float(0, 0), c.Float(1, 0), Float64
	switch {
	case !d.IsFloat():
		start, end = math.Trunc(start), math.Trunc(end)
	case d != Float64:
		ed = Float32
	}
	ex := evenSteps(c, start, end, n, ed)
	base := b.BroadcastTo(c.R.Scalar(c.Float(3, 10), ex.T.Elem), []int64{n})
	return []*hlo.Value{b.Convert(b.Pow(base, ex), d.Elem())}, nil
}

func init() {
	alias("aten::linspace.out", &Rule{Name: "aten::linspace.out", Fn: linspaceOut, OutKeepsShape: true}, OutVariant)
	alias("aten::logspace.out", &Rule{Name: "aten::logspace.out", Fn: logspaceOut, OutKeepsShape: true}, OutVariant)
}
