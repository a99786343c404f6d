package dispatch

import (
	"torchtpu/hlo"
)

// complexUnary lists the float unary kernels that also take complex input,
// as PyTorch's CPU kernels do and StableHLO lowers.
var complexUnary = map[string]bool{
	"exp": true, "expm1": true, "log": true, "log1p": true, "log2": true, "log10": true, "sqrt": true,
	"rsqrt": true, "tanh": true, "sigmoid": true, "sin": true, "cos": true, "tan": true, "reciprocal": true,
	"sinh": true, "cosh": true, "asin": true, "acos": true, "atan": true, "asinh": true, "acosh": true,
	"atanh": true, "neg": true, "exp2": true, "sinc": true,
}

// complexParts checks the real and imaginary (or abs and angle) arguments of
// complex and polar: float16, float32 or float64 tensors of one dtype. It
// returns the dtype to compute the parts in: float32 for float16 parts, whose
// complex32 result is computed as complex64.
func complexParts(c *Ctx) (DType, error) {
	a, b := c.Meta(0).DType, c.Meta(1).DType
	ok := func(d DType) bool { return d == Float32 || d == Float64 || d == Float16 }
	if !ok(a) || !ok(b) {
		return 0, NotImplementedErrorf("Expected both inputs to be Half, Float or Double tensors but got %s and %s",
			scalarTypeName(a), scalarTypeName(b))
	}
	if a != b {
		return 0, Errorf("Expected object of scalar type %s but got scalar type %s for second argument",
			scalarTypeName(a), scalarTypeName(b))
	}
	if a == Float16 {
		c.SetComplexHalf()
		return Float32, nil
	}
	return a, nil
}

// complexRule is torch.complex(real, imag).
func complexRule(c *Ctx) ([]*hlo.Value, error) {
	d, err := complexParts(c)
	if err != nil {
		return nil, err
	}
	vs, _, err := c.broadcastArgs(d, 0, 1)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{c.B.Complex(vs[0], vs[1])}, nil
}

// polarRule is torch.polar(abs, angle): abs*cos(angle) + abs*sin(angle)*i.
func polarRule(c *Ctx) ([]*hlo.Value, error) {
	d, err := complexParts(c)
	if err != nil {
		return nil, err
	}
	vs, _, err := c.broadcastArgs(d, 0, 1)
	if err != nil {
		return nil, err
	}
	b, r, th := c.B, vs[0], vs[1]
	cos, sin := b.Cos(th), b.Sin(th)
	if th.T.Elem == hlo.F32 {
		// The CPU plugin's float32 cosine is a few ULP off; compute in float64.
		t64 := b.Convert(th, hlo.F64)
		cos, sin = b.Convert(b.Cos(t64), hlo.F32), b.Convert(b.Sin(t64), hlo.F32)
	}
	return []*hlo.Value{b.Complex(b.Mul(r, cos), b.Mul(r, sin))}, nil
}

// conjOf returns the complex conjugate of x (x itself when real).
func conjOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if !x.T.Elem.IsComplex() {
		return x
	}
	return b.Complex(b.Real(x), b.Neg(b.Imag(x)))
}

// conjPhysicalRule is conj_physical: a conjugated copy.
func conjPhysicalRule(c *Ctx) ([]*hlo.Value, error) {
	return []*hlo.Value{conjOf(c.B, c.T(0))}, nil
}

// complexAngle is angle for complex x: atan2(imag, real).
func complexAngle(c *Ctx) ([]*hlo.Value, error) {
	x := c.T(0)
	return []*hlo.Value{c.B.Atan2(c.B.Imag(x), c.B.Real(x))}, nil
}

// complexSgn is sgn for complex x: x / |x|, and 0 where x is 0.
func complexSgn(c *Ctx) ([]*hlo.Value, error) {
	b, x := c.B, c.T(0)
	a := b.Abs(x)
	zero := b.Compare(hlo.EQ, a, splat(b, a, 0))
	q := b.Div(x, b.Complex(a, splat(b, a, 0)))
	return []*hlo.Value{b.Select(zero, splat(b, x, 0), q)}, nil
}

// vdotRule is vdot: the dot product with the first vector conjugated.
func vdotRule(c *Ctx) ([]*hlo.Value, error) {
	r, err := dotRule(c)
	if err != nil || !c.Meta(0).DType.IsComplex() {
		return r, err
	}
	return []*hlo.Value{c.B.DotGeneral(conjOf(c.B, c.T(0)), c.T(1), nil, nil, []int64{0}, []int64{0})}, nil
}

// AcceptsComplexScalars reports whether rule r handles the complex Python
// numbers among args: only in the argument its record names
// (Rule.ComplexScalar), which it reads through Ctx.Value, keeping the
// imaginary part. Other rules run on the CPU for such calls.
func AcceptsComplexScalars(r *Rule, args []Arg) bool {
	for i, a := range args {
		if a.Kind == ArgScalarComplex && (r.ComplexScalar == 0 || r.ComplexScalar != i) {
			return false
		}
	}
	return true
}

func init() {
	def("aten::complex", complexRule)
	def("aten::polar", polarRule)
	def("aten::conj_physical", conjPhysicalRule)
	def("aten::_conj_physical", conjPhysicalRule)
}
