package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// complexInverse wraps f, an inverse trigonometric or hyperbolic function, with
// the symmetries C's complex versions keep and CPU PyTorch follows: f(conj z) =
// conj f(z), so the sign of a zero imaginary part picks the side of a branch
// cut (asin(2.5-0j) has a negative imaginary part), and for an odd f also
// f(-z) = -f(z), so a zero real part's sign does the same (atan(-0+1e30j) is
// -pi/2). f computes on the upper half plane (the first quadrant when odd),
// and the result is conjugated (negated) back;
// complex64 computes in complex128, where XLA's formulas keep the small parts
// float32's range (and XLA:CPU's flushing of subnormals) would lose
// (atanh(1+1e-20j) was infinite).
func complexInverse(f func(b *hlo.Builder, x *hlo.Value) *hlo.Value, odd bool) func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		if !x.T.Elem.IsComplex() {
			return f(b, x)
		}
		return viaF64(func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
			re, im := b.Real(x), b.Imag(x)
			are := re
			if odd {
				are = b.Abs(re)
			}
			r := f(b, b.Complex(are, b.Abs(im)))
			rr, ri := b.Real(r), b.Imag(r)
			if odd {
				rr = b.Select(signBit(b, re), b.Neg(rr), rr)
			}
			return b.Complex(rr, b.Select(signBit(b, im), b.Neg(ri), ri))
		})(b, x)
	}
}

// complexWide computes f of a complex64 x in complex128 (viaF64) and of a real
// x as it is: the trigonometric and hyperbolic functions multiply
// exp(|y|)-sized factors by sines and cosines, which overflow float32
// (sin(100j) gave NaN+inf·j; CPU 0+inf·j).
func complexWide(f func(b *hlo.Builder, x *hlo.Value) *hlo.Value) func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return complexOr(f, viaF64(f))
}

// complexExp2 is 2**z as CPU computes it for complex z: exp(ln2·z), each part
// scaled by ln 2 (no cross terms), then CPU's exp.
func complexExp2(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return expOf(b, b.Complex(b.Mul(b.Real(x), splat(b, b.Real(x), math.Ln2)), b.Mul(b.Imag(x), splat(b, b.Imag(x), math.Ln2))))
}

// complexExpm1 is exp(z)-1 by CPU's formula for complex z = x+iy, in z's own
// precision: expm1(x)·cos(y) - 2·sin(y/2)² + i·exp(x)·sin(y). (Its imaginary
// part is NaN where exp(x) overflows and sin(y) is 0, as on CPU.)
func complexExpm1(b *hlo.Builder, z *hlo.Value) *hlo.Value {
	x, y := b.Real(z), b.Imag(z)
	a := b.Sin(b.Mul(y, splat(b, y, 0.5)))
	re := b.Sub(b.Mul(b.Expm1(x), b.Cos(y)), b.Mul(splat(b, a, 2), b.Mul(a, a)))
	return b.Complex(re, b.Mul(b.Exp(x), b.Sin(y)))
}

// zeroRealSinCos wraps sin or cos (cos set) of a complex x: where the real
// part is zero, C's answer keeps it exact: sin(±0+iy) = ±0 + i·sinh(y) and
// cos(±0+iy) = cosh(y) ∓ i·0·sign(y), where the product formula gives
// 0·inf = NaN once cosh(y) overflows (sin(1e30j) is 0+inf·j on CPU).
func zeroRealSinCos(f func(b *hlo.Builder, x *hlo.Value) *hlo.Value, cos bool) func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		r := f(b, x)
		if !x.T.Elem.IsComplex() {
			return r
		}
		re, im := b.Real(x), b.Imag(x)
		exact := b.Complex(re, b.Chlo("sinh", im))
		if cos {
			exact = b.Complex(b.Chlo("cosh", im), b.Neg(b.Mul(re, b.Sign(im))))
		}
		return b.Select(b.Compare(hlo.EQ, re, splat(b, re, 0)), exact, r)
	}
}

// complexSinCos is sin (hyperbolic unset) or sinh of a complex x from real
// functions, in float64 for complex64: sin(x+iy) = sin x cosh y + i cos x sinh y
// and sinh(x+iy) = sinh x cos y + i cosh x sin y. XLA's complex lowerings form
// sinh from exponentials and lose small arguments (sin(1e-20+1e-20j) had an
// imaginary part of 0).
func complexSinCos(hyperbolic bool) func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		return viaF64(func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
			re, im := b.Real(x), b.Imag(x)
			if hyperbolic {
				r := b.Complex(b.Mul(b.Chlo("sinh", re), b.Cos(im)), b.Mul(b.Chlo("cosh", re), b.Sin(im)))
				// sinh(x±0j) = sinh(x)±0j exactly, where cosh(x)·0 could be inf·0.
				return b.Select(b.Compare(hlo.EQ, im, splat(b, im, 0)), b.Complex(b.Chlo("sinh", re), im), r)
			}
			return b.Complex(b.Mul(b.Sin(re), b.Chlo("cosh", im)), b.Mul(b.Cos(re), b.Chlo("sinh", im)))
		})(b, x)
	}
}

// complexOr is real for real x and complex for complex x.
func complexOr(real, complex func(b *hlo.Builder, x *hlo.Value) *hlo.Value) func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, x *hlo.Value) *hlo.Value {
		if x.T.Elem.IsComplex() {
			return complex(b, x)
		}
		return real(b, x)
	}
}
