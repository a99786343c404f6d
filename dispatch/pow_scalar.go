package dispatch

import "torchtpu/hlo"

// powTensorScalar is pow(Tensor, Scalar). A floating-point base raised to a
// Python number that PyTorch's CPU kernel specializes (2, 3, 0.5, -0.5, -1,
// -2) lowers the way that kernel computes it — multiplies, a square root or a
// reciprocal — so results round as on CPU and XLA sees no power op; other
// exponents lower to stablehlo.power. Complex bases take the same forms for a
// real exponent, as on CPU (square(z) is z·z; XLA's complex power went through
// exp and log: square(100j) had an imaginary part of -0.0009). Exponents 0 and 1 give ones and a copy,
// as PyTorch's structured kernel does. Half-precision bases compute in
// float32 and round once.
func powTensorScalar(c *Ctx) ([]*hlo.Value, error) {
	d := c.resultType(0, 1)
	if a := c.Args[1]; integral(a) && a.Int < 0 && !c.Meta(0).DType.IsFloat() && !c.Meta(0).DType.IsComplex() {
		return nil, Errorf("Integers to negative integer powers are not allowed.")
	}
	if d == Float16 || d == BFloat16 {
		if err := checkScalarFits(c.Args[1], d); err != nil {
			return nil, err // CPU converts the exponent to the half type
		}
	}
	if c.Args[1].Kind != ArgTensor && !d.IsFloat() && !d.IsComplex() {
		// CPU's structured kernel answers exponents 0 and 1 before its
		// pow kernel, so even bool tensors take them.
		switch c.Float(1, 2) {
		case 0:
			return []*hlo.Value{full(c.B, d, c.Meta(0).Sizes, 1)}, nil
		case 1:
			return []*hlo.Value{c.Value(0, d)}, nil
		}
	}
	wide := d == Complex64 || d == Complex128
	if c.Args[1].Kind == ArgTensor || !(d.IsFloat() || wide) ||
		(c.Args[1].Kind == ArgScalarComplex && c.Args[1].Doubles[1] != 0) {
		return arith(powOp, false)(c)
	}
	p := c.Float(1, 0)
	x := c.Value(0, d)
	b := c.B
	if d == Float16 || d == BFloat16 {
		x = b.Convert(x, hlo.F32)
	}
	one := func() *hlo.Value { return b.BroadcastTo(b.Scalar(x.T.Elem, 1), x.T.Shape) }
	var r *hlo.Value
	switch p {
	case 0:
		r = one()
	case 1:
		r = x
	case 2:
		r = b.Mul(x, x)
	case 3:
		r = b.Mul(b.Mul(x, x), x)
	case 0.5:
		r = b.Sqrt(x)
	case -0.5:
		r = b.Rsqrt(x)
	case -1:
		r = reciprocalOf(b, x)
	case -2:
		r = b.Div(one(), b.Mul(x, x))
	default:
		return arith(powOp, false)(c)
	}
	return []*hlo.Value{b.Convert(r, d.Elem())}, nil
}
