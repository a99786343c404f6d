package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// chloOf returns a unary function that applies chlo.<name>, computing
// half-precision inputs in float32.
func chloOf(name string) func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return upcast(func(b *hlo.Builder, x *hlo.Value) *hlo.Value { return b.Chlo(name, x) })
}

// erfinvOf computes chlo.erf_inv in float64: its float32 lowering loses
// accuracy near -1 and 1.
func erfinvOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return b.Convert(b.Chlo("erf_inv", b.Convert(x, hlo.F64)), x.T.Elem)
}

// lgammaOf is log|Gamma(x)|, exactly 0 at 1 and 2 as on CPU. Narrower floats
// compute in float64: chlo's float32 lowering subtracts terms near 1 to get
// results near its zeros at 1 and 2, which loses up to 2% there (float32
// lgamma(0.9999) gave 5.865e-05 for 5.774e-05), and a few ulps at large x.
func lgammaOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	r := viaF64(chloOf("lgamma"))(b, x)
	zero := b.Or(b.Compare(hlo.EQ, x, splat(b, x, 1)), b.Compare(hlo.EQ, x, splat(b, x, 2)))
	return b.Select(zero, splat(b, x, 0), r)
}

// digammaOf is the logarithmic derivative of Gamma; PyTorch gives -inf at
// +0 and inf at -0 (where chlo gives NaN) and NaN at negative integers.
func digammaOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	r := chloOf("digamma")(b, x)
	return b.Select(b.Compare(hlo.EQ, x, splat(b, x, 0)), copysignOf(b, splat(b, x, math.Inf(1)), b.Neg(x)), r)
}

// polygammaRule is polygamma(int n, Tensor self).
func polygammaRule(c *Ctx) ([]*hlo.Value, error) {
	// polygamma_ takes (self, n); polygamma and polygamma.out take (n, self).
	ni, xi := 0, 1
	if c.IsTensor(0) {
		ni, xi = 1, 0
	}
	n := c.Int(ni, 0)
	if n < 0 {
		return nil, Errorf("polygamma(n, x) does not support negative n.")
	}
	d := c.Meta(xi).DType
	if !d.IsFloat() {
		d = DefaultFloat()
	}
	x := c.B.Convert(c.T(xi), d.Elem())
	return []*hlo.Value{polygammaOf(c.B, n, x)}, nil
}

func polygammaOf(b *hlo.Builder, n int64, x *hlo.Value) *hlo.Value {
	switch n {
	case 0:
		return digammaOf(b, x)
	case 1:
		return upcast(trigammaOf)(b, x)
	}
	// (-1)^(n+1) n! zeta(n+1, x), as PyTorch computes it.
	lg, _ := math.Lgamma(float64(n) + 1)
	f := math.Exp(lg)
	if n%2 == 0 {
		f = -f
	}
	return b.Mul(splat(b, x, f), hurwitzZeta(b, splat(b, x, float64(n+1)), x))
}

// trigammaOf is polygamma(1, x) by PyTorch's CPU algorithm, in x's precision:
// reflection below 1/2, six recurrence steps, then an asymptotic series.
func trigammaOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	refl := b.Compare(hlo.LT, x, k(0.5))
	s := b.Sin(b.Mul(k(math.Pi), x))
	r := b.Select(refl, b.Neg(b.Div(k(math.Pi*math.Pi), b.Mul(s, s))), k(0))
	x = b.Select(refl, b.Sub(k(1), x), x)
	for i := 0; i < 6; i++ {
		r = b.Add(r, b.Div(k(1), b.Mul(x, x)))
		x = b.Add(x, k(1))
	}
	ixx := b.Div(k(1), b.Mul(x, x))
	series := b.Mul(ixx, b.Sub(k(1.0/6), b.Mul(ixx, b.Sub(k(1.0/30), b.Mul(ixx, k(1.0/42))))))
	r = b.Add(r, b.Div(b.Add(b.Add(k(1), b.Div(k(1), b.Mul(k(2), x))), series), x))
	return b.Select(refl, b.Neg(r), r)
}

// mvlgammaRule is mvlgamma(self, p): sum_j lgamma(x - j/2) + p(p-1)/4 log(pi).
func mvlgammaRule(c *Ctx) ([]*hlo.Value, error) {
	p := c.Int(1, 1)
	if p < 1 {
		return nil, Errorf("p has to be greater than or equal to 1")
	}
	d := c.Meta(0).DType
	x := c.T(0)
	switch {
	case d == Bool:
		return nil, Errorf("The input tensor may not be a boolean tensor.")
	case d.IsComplex():
		return nil, Errorf("mvlgamma is not implemented for %s", d)
	case !d.IsFloat():
		// Integer inputs compute in float32, as CPU's float promotion does.
		x = c.B.Convert(x, hlo.F32)
	}
	return []*hlo.Value{upcast(func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		r := splat(b, x, float64(p*(p-1))/4*math.Log(math.Pi))
		for j := int64(0); j < p; j++ {
			r = b.Add(r, lgammaOf(b, b.Sub(x, splat(b, x, float64(j)/2))))
		}
		return r
	})(c.B, x)}, nil
}

// sincOf is sin(pi x) / (pi x), 1 at zero.
func sincOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	px := b.Mul(x, splat(b, x, math.Pi))
	r := b.Div(b.Sin(px), px)
	return b.Select(b.Compare(hlo.EQ, x, splat(b, x, 0)), splat(b, x, 1), r)
}

// exp2Of is 2^x.
func exp2Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if x.T.Elem.IsComplex() {
		return complexExp2(b, x)
	}
	return b.Pow(splat(b, x, 2), x)
}

// entrOf is -x log x, 0 at zero and -inf for negative x.
func entrOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	zero := splat(b, x, 0)
	r := b.Neg(b.Mul(x, b.Log(x)))
	r = b.Select(b.Compare(hlo.EQ, x, zero), zero, r)
	return b.Select(b.Compare(hlo.LT, x, zero), splat(b, x, math.Inf(-1)), r)
}

// ndtrOf is the standard normal CDF.
func ndtrOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return upcast(func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		half := splat(b, x, 0.5)
		t := b.Mul(x, splat(b, x, 1/math.Sqrt2))
		// erfc keeps accuracy in the lower tail.
		return b.Mul(half, b.Chlo("erfc", b.Neg(t)))
	})(b, x)
}

// ndtriOf is the inverse of ndtr. sqrt(2) erfinv(2p - 1) cancels as p nears 0 (2p - 1 rounds toward -1: at
// p = 1e-8 it is -1 in float32, so -inf), so it solves ndtr(x) = q for q = min(p, 1 - p) in log space instead:
// Newton steps on log ndtr(x) = log q, whose slope is exp(log phi(x) - log ndtr(x)), from sqrt(2) erfinv(2q - 1)
// where that is exact enough (q >= 0.02) and from the tail's asymptote -sqrt(t - log t - log 2pi), t = -2 log q,
// below. log ndtr is concave, so the steps approach the root from the left without overshooting. It computes
// in float64; the upper half is -ndtri(1 - p), as CPU's is.
func ndtriOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return viaF64(func(b *hlo.Builder, p *hlo.Value) *hlo.Value {
		k := func(v float64) *hlo.Value { return splat(b, p, v) }
		lower := b.Compare(hlo.LT, p, k(0.5))
		q := b.Select(lower, p, b.Sub(k(1), p))
		logq := b.Log(q)
		body := b.Mul(k(math.Sqrt2), b.Chlo("erf_inv", b.Sub(b.Mul(k(2), q), k(1))))
		t := b.Mul(k(-2), logq)
		tail := b.Neg(b.Sqrt(b.Max(b.Sub(b.Sub(t, b.Log(t)), k(math.Log(2*math.Pi))), k(0))))
		z := b.Select(b.Compare(hlo.LT, q, k(0.02)), tail, body)
		for i := 0; i < 5; i++ {
			ln := logNdtrOf(b, z)
			logPhi := b.Sub(b.Mul(k(-0.5), b.Mul(z, z)), k(0.5*math.Log(2*math.Pi)))
			z = b.Sub(z, b.Div(b.Sub(ln, logq), b.Exp(b.Sub(logPhi, ln))))
		}
		r := b.Select(lower, z, b.Neg(z))
		r = b.Select(b.Compare(hlo.EQ, r, k(0)), k(0), r) // p = 0.5 gives CPU's +0, not -0
		r = b.Select(b.Compare(hlo.EQ, p, k(0)), k(math.Inf(-1)), r)
		r = b.Select(b.Compare(hlo.EQ, p, k(1)), k(math.Inf(1)), r)
		bad := b.Or(b.Compare(hlo.LT, p, k(0)), b.Or(b.Compare(hlo.GT, p, k(1)), b.Compare(hlo.NE, p, p)))
		return b.Select(bad, k(math.NaN()), r)
	})(b, x)
}

// fracOf is x - trunc(x).
func fracOf(b *hlo.Builder, x *hlo.Value) *hlo.Value { return b.Sub(x, truncFloat(b, x)) }

// sgnRule is sgn: sign for real tensors.
func sgnRule(c *Ctx) ([]*hlo.Value, error) {
	if c.Meta(0).DType.IsComplex() {
		return complexSgn(c)
	}
	return unaryOp(keepDType, "sign_cpu", false, signOf)(c)
}

// signbitRule is signbit: the sign bit is set (-0.0 and negative NaN included).
func signbitRule(c *Ctx) ([]*hlo.Value, error) {
	b, x := c.B, c.T(0)
	e := x.T.Elem
	switch {
	case e == hlo.Pred || e.IsUnsigned():
		return []*hlo.Value{full(b, Bool, x.T.Shape, 0)}, nil
	case !e.IsFloat():
		return []*hlo.Value{b.Compare(hlo.LT, x, splat(b, x, 0))}, nil
	}
	ie := map[hlo.Elem]hlo.Elem{hlo.F16: hlo.S16, hlo.BF16: hlo.S16, hlo.F32: hlo.S32, hlo.F64: hlo.S64}[e]
	bits := b.BitcastConvert(x, ie)
	return []*hlo.Value{b.Compare(hlo.LT, bits, splat(b, bits, 0))}, nil
}

// angleRule is angle for real tensors: pi for negative values, NaN kept.
func angleRule(c *Ctx) ([]*hlo.Value, error) {
	if c.Meta(0).DType.IsComplex() {
		return complexAngle(c)
	}
	return unaryOp(floatDType, "angle", false, func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		zero := splat(b, x, 0)
		r := b.Select(b.Compare(hlo.LT, x, zero), splat(b, x, math.Pi), zero)
		return b.Select(b.Compare(hlo.NE, x, x), x, r)
	})(c)
}

// logitRule is logit(self, eps): log(z / (1 - z)) with z clamped to [eps, 1-eps].
func logitRule(c *Ctx) ([]*hlo.Value, error) {
	hasEps := c.Has(1)
	eps := c.Float(1, 0)
	return unaryOp(floatDType, "logit", false, upcast(func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		if hasEps {
			lo := b.BroadcastTo(c.R.Scalar(eps, x.T.Elem), x.T.Shape)
			hi := b.BroadcastTo(c.R.Scalar(1-eps, x.T.Elem), x.T.Shape)
			x = b.Min(b.Max(x, lo), hi)
		}
		return b.Log(b.Div(x, b.Sub(splat(b, x, 1), x)))
	}))(c)
}

// erfcxOf is exp(x^2) erfc(x): erfc scaled in float64 up to 26, a continued
// fraction beyond (where erfc underflows), 2 exp(x^2) for x below -6.1 and
// infinity below -26.7.
func erfcxOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	x2 := b.Mul(x, x)
	mid := b.Mul(pexp(b, x2), b.Chlo("erfc", b.Min(x, k(26))))
	ispi := k(0.56418958354775628694807945156)
	cf := b.Div(b.Mul(ispi, b.Add(b.Mul(x2, b.Add(x2, k(4.5))), k(2))),
		b.Mul(x, b.Add(b.Mul(x2, b.Add(x2, k(5))), k(3.75))))
	cf = b.Select(b.Compare(hlo.GT, x, k(5e7)), b.Div(ispi, x), cf)
	r := b.Select(b.Compare(hlo.GT, x, k(26)), cf, mid)
	r = b.Select(b.Compare(hlo.LT, x, k(-6.1)), b.Mul(k(2), pexp(b, x2)), r)
	r = b.Select(b.Compare(hlo.LT, x, k(-26.7)), k(math.Inf(1)), r)
	return b.Select(b.Compare(hlo.NE, x, x), x, r)
}

// logNdtrOf is log of the standard normal CDF, via erfcx in the lower tail.
func logNdtrOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	t := b.Mul(x, k(1/math.Sqrt2))
	lo := b.Sub(plog(b, b.Div(erfcxOf(b, b.Neg(t)), k(2))), b.Mul(t, t))
	hi := b.Log1p(b.Neg(b.Div(b.Chlo("erfc", t), k(2))))
	return b.Select(b.Compare(hlo.LT, x, k(-1)), lo, hi)
}

func init() {
	def("aten::erfc", unaryOp(floatDType, "erfc", false, chloOf("erfc")))
	def("aten::sinh", unaryOp(floatDType, "sinh", false, complexOr(chloOf("sinh"), complexSinCos(true))))
	def("aten::cosh", unaryOp(floatDType, "cosh", false, complexWide(chloOf("cosh"))))
	for _, u := range []struct {
		name string
		odd  bool
	}{{"asin", true}, {"acos", false}, {"atan", true}, {"asinh", true}, {"acosh", false}, {"atanh", true}} {
		def("aten::"+u.name, unaryOp(floatDType, u.name, false, complexInverse(chloOf(u.name), u.odd)))
	}
	def("aten::lgamma", unaryOp(floatDType, "lgamma", false, lgammaOf))
	def("aten::erfinv", unaryOp(floatDType, "erfinv", false, erfinvOf))
	def("aten::digamma", unaryOp(floatDType, "digamma", false, digammaOf))
	def("aten::polygamma", polygammaRule)
	def("aten::mvlgamma", mvlgammaRule)
	def("aten::sinc", unaryOp(floatDType, "sinc", false, upcast(sincOf)))
	def("aten::exp2", unaryOp(floatDType, "exp2", false, exp2Of))
	def("aten::special_entr", unaryOp(floatDType, "entr", false, entrOf))
	def("aten::special_ndtr", unaryOp(floatDType, "ndtr", false, ndtrOf))
	def("aten::special_ndtri", unaryOp(floatDType, "ndtri", false, ndtriOf))
	def("aten::frac", unaryOp(floatOnly, "frac_cpu", false, fracOf))
	def("aten::sgn", sgnRule)
	def("aten::signbit", signbitRule)
	def("aten::angle", angleRule)
	def("aten::logit", logitRule)
	def("aten::special_erfcx", noHalfOp("special_erfcx", viaF64(erfcxOf)))
	def("aten::special_log_ndtr", noHalfOp("special_log_ndtr", viaF64(logNdtrOf)))
}
