package dispatch

import "torchtpu/hlo"

// euclid returns the greatest common divisor of the integer tensors x and y
// (one shape) as CPU's calc_gcd computes it: Euclid's algorithm on the
// absolute values, run as a loop until every element's remainder is zero.
// The absolute value wraps for the type's lowest value, as it does on CPU.
func euclid(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	shape := x.T.Shape
	e := x.T.Elem
	abs := func(v *hlo.Value) *hlo.Value {
		if e.IsUnsigned() {
			return v
		}
		return b.Abs(v)
	}
	outs := b.While([]*hlo.Value{abs(x), abs(y)}, func(rb *hlo.Builder, a []*hlo.Value) *hlo.Value {
		zero := rb.BroadcastTo(rb.ConstantInt(hlo.T(e), 0), shape)
		nz := rb.Compare(hlo.NE, a[0], zero)
		dims := make([]int64, len(shape))
		for i := range dims {
			dims[i] = int64(i)
		}
		if len(dims) == 0 {
			return nz
		}
		return rb.Reduce(nz, rb.ConstantInt(hlo.T(hlo.Pred), 0), hlo.ReduceOr, dims...)
	}, func(rb *hlo.Builder, a []*hlo.Value) []*hlo.Value {
		zero := rb.BroadcastTo(rb.ConstantInt(hlo.T(e), 0), shape)
		one := rb.BroadcastTo(rb.ConstantInt(hlo.T(e), 1), shape)
		nz := rb.Compare(hlo.NE, a[0], zero)
		// Lanes already done divide by one and keep their values.
		rem := rb.Rem(a[1], rb.Select(nz, a[0], one))
		return []*hlo.Value{rb.Select(nz, rem, zero), rb.Select(nz, a[0], a[1])}
	})
	return outs[1]
}

// gcdLcm builds gcd(self, other) and, with lcm set, lcm(self, other) =
// |self / gcd * other| (0 where the gcd is 0), over broadcast integer tensors.
func gcdLcm(lcm bool) Fn {
	name := "gcd_cpu"
	if lcm {
		name = "lcm_cpu"
	}
	return func(c *Ctx) ([]*hlo.Value, error) {
		d := c.resultType(0, 1)
		if !d.IsIntegral(false) {
			return nil, notImplemented(name, d)
		}
		vs, shape, err := c.broadcastArgs(d, 0, 1)
		if err != nil {
			return nil, err
		}
		b := c.B
		if numel(shape) == 0 {
			return []*hlo.Value{b.ConstantInt(hlo.T(d.Elem(), shape...), 0)}, nil
		}
		g := euclid(b, vs[0], vs[1])
		if !lcm {
			return []*hlo.Value{g}, nil
		}
		// Types narrower than int compute in int, as C++ promotes them, and wrap back.
		e := d.Elem()
		if e.Bits() < 32 {
			e = hlo.S32
		}
		x, y, g := b.Convert(vs[0], e), b.Convert(vs[1], e), b.Convert(g, e)
		zero := b.BroadcastTo(b.ConstantInt(hlo.T(e), 0), shape)
		one := b.BroadcastTo(b.ConstantInt(hlo.T(e), 1), shape)
		isZero := b.Compare(hlo.EQ, g, zero)
		l := b.Abs(b.Mul(b.Div(x, b.Select(isZero, one, g)), y))
		return []*hlo.Value{b.Convert(b.Select(isZero, zero, l), d.Elem())}, nil
	}
}

func init() {
	def("aten::gcd", gcdLcm(false))
	def("aten::lcm", gcdLcm(true))
}
