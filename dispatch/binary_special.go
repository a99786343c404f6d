package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// floatArith builds a promoting binary rule whose integer result type
// becomes float32, with f computed in float32 for half-precision inputs.
func floatArith(f func(b *hlo.Builder, x, y *hlo.Value) *hlo.Value) Fn {
	return arith(func(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
		e := x.T.Elem
		if e == hlo.F16 || e == hlo.BF16 {
			return b.Convert(f(b, b.Convert(x, hlo.F32), b.Convert(y, hlo.F32)), e), nil
		}
		return f(b, x, y), nil
	}, true)
}

// xlogyOf is x * log(y), 0 where x is 0 (unless y is NaN).
func xlogyOf(logf func(b *hlo.Builder, y *hlo.Value) *hlo.Value) func(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
		zero := splat(b, x, 0)
		r := b.Mul(x, logf(b, y))
		r = b.Select(b.Compare(hlo.EQ, x, zero), zero, r)
		return b.Select(b.Compare(hlo.NE, y, y), y, r)
	}
}

// hypotOf is sqrt(x^2 + y^2) without intermediate overflow.
func hypotOf(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	ax, ay := b.Abs(x), b.Abs(y)
	hi, lo := b.Max(ax, ay), b.Min(ax, ay)
	zero := splat(b, x, 0)
	safe := b.Select(b.Compare(hlo.EQ, hi, zero), splat(b, x, 1), hi)
	q := b.Div(lo, safe)
	r := b.Mul(hi, b.Sqrt(b.Add(splat(b, x, 1), b.Mul(q, q))))
	inf := splat(b, x, math.Inf(1))
	return b.Select(b.Or(b.Compare(hlo.EQ, ax, inf), b.Compare(hlo.EQ, ay, inf)), inf, r)
}

// signBit is true where the sign bit of float x is set.
func signBit(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	ie := map[hlo.Elem]hlo.Elem{hlo.F16: hlo.S16, hlo.BF16: hlo.S16, hlo.F32: hlo.S32, hlo.F64: hlo.S64}[x.T.Elem]
	bits := b.BitcastConvert(x, ie)
	return b.Compare(hlo.LT, bits, splat(b, bits, 0))
}

// copysignOf is |x| with the sign of y.
func copysignOf(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	ax := b.Abs(x)
	return b.Select(signBit(b, y), b.Neg(ax), ax)
}

// logaddexpOf is log(exp(x) + exp(y)) (base 2 with two), stable for large inputs.
func logaddexpOf(two bool) func(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
		if x.T.Elem.IsComplex() {
			return complexLogaddexp(b, x, y)
		}
		m := b.Max(x, y)
		d := b.Neg(b.Abs(b.Sub(x, y)))
		var r *hlo.Value
		if two {
			r = b.Add(m, b.Mul(b.Log1p(b.Pow(splat(b, x, 2), d)), splat(b, x, 1/math.Ln2)))
		} else {
			r = b.Add(m, b.Log1p(b.Exp(d)))
		}
		// Equal infinities (x - y is NaN) give x.
		same := b.Compare(hlo.EQ, x, y)
		return b.Select(b.And(same, b.Compare(hlo.EQ, b.Abs(x), splat(b, x, math.Inf(1)))), x, r)
	}
}

// complexLogaddexp is log(exp(x) + exp(y)) for complex x and y as CPU computes it: with hi the operand
// of the larger real part and lo the other, hi + log1p(exp(lo - hi)); two equal -inf real parts give lo.
func complexLogaddexp(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	xr, yr := b.Real(x), b.Real(y)
	xBigger := b.Compare(hlo.GE, xr, yr)
	hi, lo := b.Select(xBigger, x, y), b.Select(xBigger, y, x)
	r := b.Add(hi, b.Log1p(b.Exp(b.Sub(lo, hi))))
	loR := b.Real(lo)
	bothNegInf := b.And(b.Compare(hlo.EQ, loR, b.Real(hi)), b.Compare(hlo.EQ, loR, splat(b, loR, math.Inf(-1))))
	return b.Select(bothNegInf, lo, r)
}

// fmaxOp and fminOp ignore a NaN on one side.
func fmaxOp(minimum bool) func(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	return func(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
		if d == Bool {
			if minimum {
				return b.And(x, y), nil
			}
			return b.Or(x, y), nil
		}
		var r *hlo.Value
		if minimum {
			r = b.Min(x, y)
		} else {
			r = b.Max(x, y)
		}
		if !d.IsFloat() {
			return r, nil
		}
		r = b.Select(b.Compare(hlo.NE, y, y), x, r)
		return b.Select(b.Compare(hlo.NE, x, x), y, r), nil
	}
}

// nextafterOp is the next representable value after x toward y.
func nextafterOp(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	if !d.IsFloat() {
		return nil, notImplemented("nextafter_cpu", d)
	}
	return b.Chlo("next_after", x, y), nil
}

// heavisideRule is heaviside(self, values): values where self is 0, else self > 0.
func heavisideRule(c *Ctx) ([]*hlo.Value, error) {
	if c.Meta(0).DType.IsComplex() || c.Meta(1).DType.IsComplex() {
		return nil, &KindedError{NotImplementedErr, "heaviside is not yet implemented for complex tensors."}
	}
	if c.Meta(0).DType != c.Meta(1).DType {
		return nil, Errorf("heaviside is not yet implemented for tensors with different dtypes.")
	}
	d := c.Meta(0).DType
	vs, _, err := c.broadcastArgs(d, 0, 1)
	if err != nil {
		return nil, err
	}
	b, x, v := c.B, vs[0], vs[1]
	if d == Bool {
		return []*hlo.Value{b.Or(x, b.And(b.Not(x), v))}, nil
	}
	zero := splat(b, x, 0)
	pos := b.Convert(b.Compare(hlo.GT, x, zero), x.T.Elem)
	// NaN is neither 0 nor positive: it gives 0, as on CPU.
	return []*hlo.Value{b.Select(b.Compare(hlo.EQ, x, zero), v, pos)}, nil
}

// floorDivideOp follows PyTorch's div_floor: the quotient of x - fmod(x, y),
// corrected toward the floor, so that it agrees with x // y on CPU.
func floorDivideOp(b *hlo.Builder, x, y *hlo.Value, d DType) (*hlo.Value, error) {
	if d == Bool {
		return nil, notImplemented("div_floor_cpu", d)
	}
	if !d.IsFloat() {
		return floorDiv(b, x, y, d), nil
	}
	zero, one := splat(b, x, 0), splat(b, x, 1)
	mod := b.Rem(x, y)
	div := b.Div(b.Sub(x, mod), y)
	fix := b.And(b.Compare(hlo.NE, mod, zero), b.Xor(b.Compare(hlo.LT, y, zero), b.Compare(hlo.LT, mod, zero)))
	div = b.Select(fix, b.Sub(div, one), div)
	fl := b.Floor(div)
	fl = b.Select(b.Compare(hlo.GT, b.Sub(div, fl), splat(b, x, 0.5)), b.Add(fl, one), fl)
	q := b.Div(x, y)
	fl = b.Select(b.Compare(hlo.EQ, div, zero), copysignOf(b, zero, q), fl)
	return b.Select(b.Compare(hlo.EQ, y, zero), q, fl), nil
}

// rsubRule is rsub(self, other, alpha): other - alpha * self.
func rsubRule(c *Ctx) ([]*hlo.Value, error) {
	d := c.resultType(0, 1)
	if err := subCheck(c, 1, 0); err != nil {
		return nil, err
	}
	if err := alphaCheck(c, 2, d); err != nil {
		return nil, err
	}
	vs, _, err := c.broadcastArgs(d, 0, 1)
	if err != nil {
		return nil, err
	}
	y := vs[0]
	if alpha := c.Float(2, 1); alpha != 1 {
		y = c.B.Mul(y, c.B.BroadcastTo(c.R.Scalar(alpha, d.Elem()), y.T.Shape))
	}
	return []*hlo.Value{c.B.Sub(vs[1], y)}, nil
}

// zetaOf is the Hurwitz zeta function zeta(x, q).
func zetaOf(b *hlo.Builder, x, q *hlo.Value) *hlo.Value {
	// CPU tests x == 1 and a pole of q (q <= 0, integral) before it sees a NaN.
	nan := b.Or(b.Compare(hlo.NE, x, x), b.Compare(hlo.NE, q, q))
	pole := b.And(b.Compare(hlo.LE, q, splat(b, q, 0)), b.Compare(hlo.EQ, q, b.Floor(q)))
	nan = b.And(nan, b.Not(b.Or(b.Compare(hlo.EQ, x, splat(b, x, 1)), pole)))
	return b.Select(nan, b.Add(x, q), hurwitzZeta(b, x, q))
}

func init() {
	for _, n := range [][2]string{{"aten::xlogy", ""}, {"aten::special_xlog1py", "special_"}} {
		logf := (*hlo.Builder).Log
		if n[1] != "" {
			logf = (*hlo.Builder).Log1p
		}
		f := floatArith(xlogyOf(logf))
		if n[1] == "" {
			def("aten::xlogy.Tensor", f, "aten::xlogy.OutTensor")
			def("aten::xlogy.Scalar_Other", f, "aten::xlogy.OutScalar_Other")
			def("aten::xlogy.Scalar_Self", f, "aten::xlogy.OutScalar_Self")
		} else {
			def(n[0], f, n[0]+".out")
			def(n[0]+".other_scalar", f, n[0]+".other_scalar_out")
			def(n[0]+".self_scalar", f, n[0]+".self_scalar_out")
		}
	}
	def("aten::special_zeta", floatArith(zetaOf), "aten::special_zeta.out")
	def("aten::special_zeta.other_scalar", floatArith(zetaOf), "aten::special_zeta.other_scalar_out")
	def("aten::special_zeta.self_scalar", floatArith(zetaOf), "aten::special_zeta.self_scalar_out")
	def("aten::hypot", floatArith(hypotOf))
	def("aten::copysign.Tensor", floatArith(copysignOf), "aten::copysign.out")
	def("aten::copysign.Scalar", floatArith(copysignOf), "aten::copysign.Scalar_out")
	def("aten::logaddexp", floatArith(logaddexpOf(false)))
	def("aten::logaddexp2", floatArith(logaddexpOf(true)))
	def("aten::fmax", arith(fmaxOp(false), false))
	def("aten::fmin", arith(fmaxOp(true), false))
	def("aten::nextafter", arith(nextafterOp, false))
	def("aten::heaviside", heavisideRule)
	fd := def("aten::floor_divide", intDivision(arithOpmath(floorDivideOp, false)))
	fd.Needs = hostArgs(1)
	fds := def("aten::floor_divide.Scalar", intDivision(arithOpmath(floorDivideOp, false)), "aten::floor_divide.Scalar_out")
	fds.Needs = hostArgs(1)
	// floor_divide's in-place overloads are floor_divide_.Tensor and .Scalar; def derives floor_divide_ alone.
	alias("aten::floor_divide_.Tensor", fd, Inplace)
	alias("aten::floor_divide_.Scalar", fds, Inplace)
	def("aten::rsub.Tensor", rsubRule, "aten::rsub.Tensor_out").Range = swapped(addRange(true))
}
