package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// unaryKind says how a unary op maps its input dtype to the result dtype.
type unaryKind int

const (
	keepDType      unaryKind = iota // result has the input's dtype
	floatDType                      // integers and bool compute in float32
	floatOnly                       // non-float inputs are an error
	floatOrComplex                  // inputs neither float nor complex are an error
)

// unaryOp builds a unary rule. kernel names the CPU kernel in "not
// implemented" errors; noBool rejects bool input with that error.
func unaryOp(kind unaryKind, kernel string, noBool bool, f func(b *hlo.Builder, x *hlo.Value) *hlo.Value) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		d := c.Meta(0).DType
		if noBool && d == Bool {
			return nil, notImplemented(kernel, d)
		}
		switch kind {
		case floatDType:
			if d.IsComplex() && !complexUnary[kernel] {
				return nil, notImplemented(kernel, d)
			}
			if !d.IsFloat() && !d.IsComplex() {
				d = DefaultFloat()
			}
		case floatOnly:
			if !d.IsFloat() {
				return nil, notImplemented(kernel, d)
			}
		case floatOrComplex:
			if !d.IsFloat() && !d.IsComplex() {
				return nil, notImplemented(kernel, d)
			}
		}
		return []*hlo.Value{f(c.B, c.B.Convert(c.T(0), d.Elem()))}, nil
	}
}

// upcast runs f in float32 for half-precision x and converts back.
func upcast(f func(b *hlo.Builder, x *hlo.Value) *hlo.Value) func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		e := x.T.Elem
		if e == hlo.F16 || e == hlo.BF16 {
			return b.Convert(f(b, b.Convert(x, hlo.F32)), e)
		}
		return f(b, x)
	}
}

// splat is a constant of x's type filled with v.
func splat(b *hlo.Builder, x *hlo.Value, v float64) *hlo.Value {
	return b.BroadcastTo(b.Scalar(x.T.Elem, v), x.T.Shape)
}

// poly evaluates sum cs[i] * z^(n-1-i) by Horner's rule.
func poly(b *hlo.Builder, z *hlo.Value, cs ...float64) *hlo.Value {
	r := splat(b, z, cs[0])
	for _, k := range cs[1:] {
		r = b.Add(b.Mul(r, z), splat(b, z, k))
	}
	return r
}

// erfF32 is a rational approximation of erf accurate to a few ULP in float32.
func erfF32(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	x = b.Min(b.Max(x, splat(b, x, -4)), splat(b, x, 4))
	x2 := b.Mul(x, x)
	p := poly(b, x2, -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
		-5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
	q := poly(b, x2, -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
		-7.37332916720468e-03, -1.42647390514189e-02)
	return b.Div(b.Mul(x, p), q)
}

// erfF64 follows Cephes: a rational function near zero and 1 - erfc beyond.
func erfF64(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	// Beyond 30 erfc underflows; clamping keeps infinities out of the
	// polynomials (NaN still propagates).
	x = b.Min(b.Max(x, splat(b, x, -30)), splat(b, x, 30))
	z := b.Mul(x, x)
	small := b.Div(b.Mul(x, poly(b, z, 9.60497373987051638749e0, 9.00260197203842689217e1,
		2.23200534594684319226e3, 7.00332514112805075473e3, 5.55923013010394962768e4)),
		poly(b, z, 1, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
			2.26290000613890934246e4, 4.92673942608635921086e4))
	ax := b.Abs(x)
	pNear := poly(b, ax, 2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
		4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
		9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
	qNear := poly(b, ax, 1, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
		9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
		1.65666309194161350182e3, 5.57535340817727675546e2)
	pFar := poly(b, ax, 5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
		6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
	qFar := poly(b, ax, 1, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
		1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)
	near := b.Compare(hlo.LT, ax, splat(b, ax, 8))
	erfc := b.Mul(b.Exp(b.Neg(z)), b.Div(b.Select(near, pNear, pFar), b.Select(near, qNear, qFar)))
	one := splat(b, x, 1)
	big := b.Sub(one, erfc) // erf(|x|)
	neg := b.Compare(hlo.LT, x, splat(b, x, 0))
	big = b.Select(neg, b.Neg(big), big)
	return b.Select(b.Compare(hlo.GT, ax, one), big, small)
}

// erfOf computes erf of a float tensor without chlo.
func erfOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if x.T.Elem == hlo.F64 {
		return erfF64(b, x)
	}
	return upcast(erfF32)(b, x)
}

// viaF64 computes f in float64 for float32 input (and in float32 for half
// precision): the CPU plugin's float32 lowerings of some transcendental
// functions are a few ULP off PyTorch's correctly rounded CPU results.
// expOf is exp; for a complex x whose real part is infinite and imaginary
// part is not finite it gives C99's values, as CPU does (inf + nan·j for
// +inf, 0 for -inf), where XLA's exp(re)·(cos im + i sin im) gives NaNs.
func expOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	r := b.Exp(x)
	if !x.T.Elem.IsComplex() {
		return r
	}
	re, im := b.Real(x), b.Imag(x)
	ft := re.T
	inf := b.Constant(ft, math.Inf(1))
	bad := b.Not(b.IsFinite(im))
	posInf := b.And(bad, b.Compare(hlo.EQ, re, inf))
	negInf := b.And(bad, b.Compare(hlo.EQ, re, b.Neg(inf)))
	r = b.Select(posInf, b.Complex(inf, b.Constant(ft, math.NaN())), r)
	negZero := b.Select(b.Compare(hlo.LT, im, b.Constant(ft, 0)), b.Constant(ft, math.Copysign(0, -1)), b.Constant(ft, 0))
	r = b.Select(negInf, b.Complex(b.Constant(ft, 0), negZero), r)
	// A zero imaginary part stays as it is, sign included: exp(x-0j) = e^x-0j.
	return b.Select(b.Compare(hlo.EQ, im, b.Constant(ft, 0)), b.Complex(b.Exp(re), im), r)
}

// expm1Of is exp(x)-1: in float64 for real x, by CPU's formula for complex x.
func expm1Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if x.T.Elem.IsComplex() {
		return complexExpm1(b, x)
	}
	return viaF64((*hlo.Builder).Expm1)(b, x)
}

func viaF64(f func(b *hlo.Builder, x *hlo.Value) *hlo.Value) func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		if x.T.Elem == hlo.F64 || x.T.Elem == hlo.C128 {
			return f(b, x)
		}
		wide := hlo.F64
		if x.T.Elem.IsComplex() {
			wide = hlo.C128
		}
		return b.Convert(f(b, b.Convert(x, wide)), x.T.Elem)
	}
}

func log2Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return divParts(b, b.Log(x), math.Ln2)
}

func log10Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return divParts(b, b.Log(x), math.Ln10)
}

// divParts divides x by the real number k; a complex x has each part
// divided (a complex division would turn an infinite part's zero partner
// into NaN).
func divParts(b *hlo.Builder, x *hlo.Value, k float64) *hlo.Value {
	if x.T.Elem.IsComplex() {
		re, im := b.Real(x), b.Imag(x)
		return b.Complex(b.Div(re, splat(b, re, k)), b.Div(im, splat(b, im, k)))
	}
	return b.Div(x, splat(b, x, k))
}

func reciprocalOf(b *hlo.Builder, x *hlo.Value) *hlo.Value { return b.Div(splat(b, x, 1), x) }

// reluOf keeps x where it is not negative (NaN and -0.0 pass through).
func reluOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	zero := splat(b, x, 0)
	return b.Select(b.Compare(hlo.LT, x, zero), zero, x)
}

// signOf is (0 < x) - (x < 0): NaN gives 0, as PyTorch's CPU kernel does.
func signOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if x.T.Elem == hlo.Pred {
		return x
	}
	zero := splat(b, x, 0)
	pos := b.Convert(b.Compare(hlo.GT, x, zero), x.T.Elem)
	if x.T.Elem.IsUnsigned() {
		return pos
	}
	return b.Sub(pos, b.Convert(b.Compare(hlo.LT, x, zero), x.T.Elem))
}

// roundingOp is floor, ceil, round or trunc: the identity on integers.
func roundingOp(kernel string, f func(b *hlo.Builder, x *hlo.Value) *hlo.Value) Fn {
	return unaryOp(keepDType, kernel, true, func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		if !x.T.Elem.IsFloat() && !x.T.Elem.IsComplex() {
			return x
		}
		return f(b, x)
	})
}

func roundDecimals(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	if !d.IsFloat() {
		return nil, notImplemented("round_cpu", d)
	}
	n := c.Int(1, 0)
	b, x := c.B, c.T(0)
	if n == 0 {
		return []*hlo.Value{b.RoundEven(x)}, nil
	}
	p := splat(b, x, math.Pow(10, math.Abs(float64(n))))
	if n > 0 {
		return []*hlo.Value{b.Div(b.RoundEven(b.Mul(x, p)), p)}, nil
	}
	return []*hlo.Value{b.Mul(b.RoundEven(b.Div(x, p)), p)}, nil
}

func negRule(c *Ctx) ([]*hlo.Value, error) {
	if c.Meta(0).DType == Bool {
		return nil, Errorf("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
	}
	return []*hlo.Value{c.B.Neg(c.T(0))}, nil
}

func absOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if x.T.Elem.IsUnsigned() {
		return x
	}
	return b.Abs(x)
}

func reluRule(c *Ctx) ([]*hlo.Value, error) {
	if c.Meta(0).DType == Bool {
		return nil, Errorf("Boolean inputs not supported for relu")
	}
	return []*hlo.Value{reluOf(c.B, c.T(0))}, nil
}

func isnanRule(c *Ctx) ([]*hlo.Value, error) {
	x := c.T(0)
	if x.T.Elem.IsComplex() {
		re, im := c.B.Real(x), c.B.Imag(x)
		return []*hlo.Value{c.B.Or(c.B.Compare(hlo.NE, re, re), c.B.Compare(hlo.NE, im, im))}, nil
	}
	if !x.T.Elem.IsFloat() {
		return []*hlo.Value{full(c.B, Bool, x.T.Shape, 0)}, nil
	}
	return []*hlo.Value{c.B.Compare(hlo.NE, x, x)}, nil
}

func isinfRule(c *Ctx) ([]*hlo.Value, error) {
	x := c.T(0)
	if x.T.Elem.IsComplex() {
		inf := func(v *hlo.Value) *hlo.Value {
			return c.B.Compare(hlo.EQ, c.B.Abs(v), splat(c.B, v, math.Inf(1)))
		}
		return []*hlo.Value{c.B.Or(inf(c.B.Real(x)), inf(c.B.Imag(x)))}, nil
	}
	if !x.T.Elem.IsFloat() {
		return []*hlo.Value{full(c.B, Bool, x.T.Shape, 0)}, nil
	}
	return []*hlo.Value{c.B.Compare(hlo.EQ, c.B.Abs(x), splat(c.B, x, math.Inf(1)))}, nil
}

// infRule builds isposinf or isneginf: x equals +inf (or -inf); integers
// are never infinite.
func infRule(neg bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		x := c.T(0)
		if !x.T.Elem.IsFloat() {
			return []*hlo.Value{full(c.B, Bool, x.T.Shape, 0)}, nil
		}
		inf := math.Inf(1)
		if neg {
			inf = math.Inf(-1)
		}
		return []*hlo.Value{c.B.Compare(hlo.EQ, x, splat(c.B, x, inf))}, nil
	}
}

func logicalNot(c *Ctx) ([]*hlo.Value, error) {
	x := c.T(0)
	if x.T.Elem == hlo.Pred {
		return []*hlo.Value{c.B.Not(x)}, nil
	}
	return []*hlo.Value{c.B.Compare(hlo.EQ, x, splat(c.B, x, 0))}, nil
}

func bitwiseNot(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	if d.IsFloat() {
		return nil, notImplemented("bitwise_not_cpu", d)
	}
	return []*hlo.Value{c.B.Not(c.T(0))}, nil
}

// maxFinite is the largest finite value of a float element type.
func maxFinite(e hlo.Elem) float64 {
	switch e {
	case hlo.F16:
		return 65504
	case hlo.BF16:
		return 3.3895313892515355e38
	case hlo.F32:
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// nanToNum is nan_to_num(self, nan=None, posinf=None, neginf=None).
func nanToNum(c *Ctx) ([]*hlo.Value, error) {
	b, x := c.B, c.T(0)
	if !x.T.Elem.IsFloat() {
		return []*hlo.Value{x}, nil
	}
	top := maxFinite(x.T.Elem)
	nan := b.BroadcastTo(c.R.Scalar(c.Float(1, 0), x.T.Elem), x.T.Shape)
	pos := b.BroadcastTo(c.R.Scalar(c.Float(2, top), x.T.Elem), x.T.Shape)
	neg := b.BroadcastTo(c.R.Scalar(c.Float(3, -top), x.T.Elem), x.T.Shape)
	inf := splat(b, x, math.Inf(1))
	r := b.Select(b.Compare(hlo.NE, x, x), nan, x)
	r = b.Select(b.Compare(hlo.EQ, x, inf), pos, r)
	r = b.Select(b.Compare(hlo.EQ, x, b.Neg(inf)), neg, r)
	return []*hlo.Value{r}, nil
}

func geluRule(c *Ctx) ([]*hlo.Value, error) {
	mode := c.Str(1, "none")
	if mode != "none" && mode != "tanh" {
		return nil, Errorf("approximate argument must be either none or tanh.")
	}
	return unaryOp(floatOnly, "GeluKernelImpl", false, upcast(func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		return geluOf(b, x, mode == "tanh")
	}))(c)
}

// geluOf is x·Φ(x) by erf, or by tanh's approximation when tanh is set.
func geluOf(b *hlo.Builder, x *hlo.Value, tanh bool) *hlo.Value {
	half, one := splat(b, x, 0.5), splat(b, x, 1)
	var inner *hlo.Value
	if tanh {
		x3 := b.Mul(b.Mul(x, x), x)
		u := b.Mul(splat(b, x, math.Sqrt(2/math.Pi)), b.Add(x, b.Mul(splat(b, x, 0.044715), x3)))
		inner = b.Tanh(u)
	} else {
		inner = erfOf(b, b.Mul(x, splat(b, x, 1/math.Sqrt2)))
	}
	return b.Mul(b.Mul(half, x), b.Add(one, inner))
}

func siluOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if x.T.Elem.IsComplex() {
		// x / (1 + exp(-x)), as CPU's complex kernel computes it.
		return b.Div(x, b.Add(splat(b, x, 1), b.Exp(b.Neg(x))))
	}
	return b.Mul(x, b.Logistic(x))
}

// boundFor clamps a number to what dtype elem can hold, so a bound like -1
// on uint8 does not wrap around.
func boundFor(v float64, e hlo.Elem) float64 {
	if e.IsFloat() {
		return v
	}
	return math.Max(hlo.Lowest(e), math.Min(hlo.Highest(e), v))
}

func hardtanhRule(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	if d == Bool {
		return nil, &KindedError{NotImplementedErr, "Bool inputs not supported for hardtanh"}
	}
	// CPU reads the bounds as int64 for integer types and as the type itself for floats, with overflow checks.
	for i := 1; i <= 2; i++ {
		to := d
		if !d.IsFloat() {
			to = Int64
		}
		if err := checkScalarFits(c.Args[i], to); c.Has(i) && err != nil {
			return nil, err
		}
	}
	b, x := c.B, c.T(0)
	e := x.T.Elem
	lo := b.BroadcastTo(c.R.Scalar(boundFor(c.Float(1, -1), e), e), x.T.Shape)
	hi := b.BroadcastTo(c.R.Scalar(boundFor(c.Float(2, 1), e), e), x.T.Shape)
	return []*hlo.Value{b.Min(b.Max(x, lo), hi)}, nil
}

func leakyReluRule(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	if !d.IsFloat() {
		return nil, notImplemented("leaky_relu_cpu", d)
	}
	b, x := c.B, c.T(0)
	if d == Float16 || d == BFloat16 {
		// CPU multiplies in float32 by the slope in float32 and rounds once.
		x32 := b.Convert(x, hlo.F32)
		slope := b.BroadcastTo(c.R.Scalar(c.Float(1, 0.01), hlo.F32), x.T.Shape)
		return []*hlo.Value{b.Select(b.Compare(hlo.GT, x, splat(b, x, 0)), x, b.Convert(b.Mul(x32, slope), x.T.Elem))}, nil
	}
	slope := b.BroadcastTo(c.R.Scalar(c.Float(1, 0.01), x.T.Elem), x.T.Shape)
	return []*hlo.Value{b.Select(b.Compare(hlo.GT, x, splat(b, x, 0)), x, b.Mul(x, slope))}, nil
}

// eluRule is elu(self, alpha, scale, input_scale).
func eluRule(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	if !d.IsFloat() {
		return nil, notImplemented("elu_cpu", d)
	}
	alpha, scale, inScale := c.Float(1, 1), c.Float(2, 1), c.Float(3, 1)
	return []*hlo.Value{upcast(func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		num := func(v float64) *hlo.Value { return b.BroadcastTo(c.R.Scalar(v, x.T.Elem), x.T.Shape) }
		neg := b.Mul(num(alpha*scale), b.Expm1(b.Mul(x, num(inScale))))
		return b.Select(b.Compare(hlo.GT, x, splat(b, x, 0)), b.Mul(x, num(scale)), neg)
	})(c.B, c.T(0))}, nil
}

func init() {
	def("aten::neg", negRule)
	abs := float8Abs(unaryOp(keepDType, "abs_cpu", true, absOf))
	defInplace("aten::abs_", func(c *Ctx) ([]*hlo.Value, error) {
		if c.Meta(0).DType.IsComplex() {
			return nil, Errorf("In-place abs is not supported for complex tensors.")
		}
		return abs(c)
	})
	def("aten::abs", abs)
	def("aten::relu", reluRule)
	def("aten::sign", unaryOp(keepDType, "sign_cpu", false, signOf))
	def("aten::floor", roundingOp("floor_vml_cpu", (*hlo.Builder).Floor))
	def("aten::ceil", roundingOp("ceil_vml_cpu", (*hlo.Builder).Ceil))
	def("aten::round", roundingOp("round_vml_cpu", (*hlo.Builder).RoundEven))
	def("aten::trunc", roundingOp("trunc_vml_cpu", truncFloat))
	def("aten::round.decimals", roundDecimals, "aten::round.decimals_out")
	floats := []struct {
		name string
		f    func(b *hlo.Builder, x *hlo.Value) *hlo.Value
	}{
		{"exp", expOf}, {"expm1", expm1Of}, {"log", (*hlo.Builder).Log},
		{"log1p", viaF64((*hlo.Builder).Log1p)}, {"log2", viaF64(log2Of)}, {"log10", viaF64(log10Of)},
		{"sqrt", (*hlo.Builder).Sqrt}, {"rsqrt", upcast((*hlo.Builder).Rsqrt)}, {"tanh", complexWide((*hlo.Builder).Tanh)},
		{"sigmoid", upcast((*hlo.Builder).Logistic)}, {"sin", zeroRealSinCos(complexOr((*hlo.Builder).Sin, complexSinCos(false)), false)},
		{"cos", zeroRealSinCos(viaF64((*hlo.Builder).Cos), true)},
		{"tan", complexWide((*hlo.Builder).Tan)}, {"reciprocal", reciprocalOf}, {"erf", erfOf},
	}
	for _, u := range floats {
		def("aten::"+u.name, unaryOp(floatDType, u.name, false, u.f))
	}
	def("aten::logical_not", logicalNot).Range = logicalNotRange
	def("aten::bitwise_not", bitwiseNot).Range = bitwiseNotRange
	def("aten::isnan", isnanRule)
	def("aten::isinf", isinfRule)
	def("aten::isposinf", infRule(false))
	def("aten::isneginf", infRule(true))
	def("aten::nan_to_num", nanToNum)
	def("aten::gelu", geluRule)
	def("aten::silu", unaryOp(floatOrComplex, "silu_cpu", false, upcast(siluOf)))
	def("aten::hardtanh", hardtanhRule)
	def("aten::leaky_relu", leakyReluRule)
	def("aten::elu", eluRule)
}
