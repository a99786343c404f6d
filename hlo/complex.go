package hlo

import (
	"fmt"
	"math"
)

// Abs returns |x| elementwise; for a complex x the result is real and follows
// hypot: infinite when either part is infinite, else NaN when either part is
// NaN (XLA's complex abs gives 0 for 0+NaN·j).
func (b *Builder) Abs(x *Value) *Value {
	if x.T.Elem.IsUnsigned() || x.T.Elem == Pred {
		return x // stablehlo.abs takes signed integers and floats only
	}
	r := b.op("stablehlo.abs", x.T.WithElem(x.T.Elem.Real()), "", x)
	if !x.T.Elem.IsComplex() {
		return r
	}
	re, im := b.Real(x), b.Imag(x)
	inf := b.Constant(r.T, math.Inf(1))
	isInf := func(v *Value) *Value { return b.Compare(EQ, b.op("stablehlo.abs", v.T, "", v), inf) }
	nan := b.Constant(r.T, math.NaN())
	r = b.Select(b.Or(b.Compare(NE, re, re), b.Compare(NE, im, im)), nan, r)
	return b.Select(b.Or(isInf(re), isInf(im)), inf, r)
}

// complexNaNs gives r, the log (log set) or square root of a complex x, C's
// answers where a part of x is NaN: log's real part follows Abs (infinite
// when a part is infinite, else NaN); sqrt is NaN+NaN·j unless the imaginary
// part is infinite or the real part is (XLA gave log(NaN·j) = -inf and
// sqrt(1+NaN·j) a finite real part).
func (b *Builder) complexNaNs(x, r *Value, log bool) *Value {
	if !x.T.Elem.IsComplex() {
		return r
	}
	re, im := b.Real(x), b.Imag(x)
	isNaN := func(v *Value) *Value { return b.Compare(NE, v, v) }
	inf := b.Constant(re.T, math.Inf(1))
	isInf := func(v *Value) *Value { return b.Compare(EQ, b.op("stablehlo.abs", v.T, "", v), inf) }
	anyNaN := b.Or(isNaN(re), isNaN(im))
	if log {
		return b.Select(anyNaN, b.Complex(b.unary("log", b.Abs(x)), b.Imag(r)), r)
	}
	// sqrt follows C's csqrt: the imaginary part keeps x's sign (sqrt(-1-0j)
	// is -1j), an infinite imaginary part gives +inf+im·j, and a NaN part
	// gives NaN+NaN·j except beside an infinite real part.
	nan, zero := b.Constant(re.T, math.NaN()), b.Constant(re.T, 0)
	signOf := func(mag, sign *Value) *Value {
		neg := b.Compare(LT, b.BitcastConvert(sign, signedOfWidth(sign.T.Elem)), b.Constant(T(signedOfWidth(sign.T.Elem), sign.T.Shape...), 0))
		m := b.op("stablehlo.abs", mag.T, "", mag)
		return b.Select(neg, b.op("stablehlo.negate", m.T, "", m), m)
	}
	out := b.Complex(b.Real(r), signOf(b.Imag(r), im))
	posInf, negInf := b.Compare(EQ, re, inf), b.Compare(EQ, re, b.op("stablehlo.negate", inf.T, "", inf))
	out = b.Select(b.And(anyNaN, b.Not(b.Or(isInf(re), isInf(im)))), b.Complex(nan, nan), out)
	out = b.Select(b.And(posInf, isNaN(im)), b.Complex(inf, nan), out)
	out = b.Select(b.And(negInf, isNaN(im)), b.Complex(nan, inf), out)
	out = b.Select(b.And(negInf, b.Not(isNaN(im))), b.Complex(zero, signOf(inf, im)), out)
	return b.Select(isInf(im), b.Complex(inf, im), out)
}

// signedOfWidth is the signed integer type as wide as the float type e.
func signedOfWidth(e Elem) Elem {
	if e == F64 {
		return S64
	}
	return S32
}

// Real returns the real part of a complex x (x itself when x is real).
func (b *Builder) Real(x *Value) *Value {
	if !x.T.Elem.IsComplex() {
		return x
	}
	return b.op("stablehlo.real", x.T.WithElem(x.T.Elem.Real()), "", x)
}

// Imag returns the imaginary part of a complex x (zeros when x is real).
func (b *Builder) Imag(x *Value) *Value {
	if !x.T.Elem.IsComplex() {
		return b.BroadcastTo(b.Scalar(x.T.Elem, 0), x.T.Shape)
	}
	return b.op("stablehlo.imag", x.T.WithElem(x.T.Elem.Real()), "", x)
}

// Complex returns re + im*i from two real tensors of the same type.
func (b *Builder) Complex(re, im *Value) *Value {
	if !re.T.Equal(im.T) {
		failf("complex: operand types differ: %v vs %v", re.T, im.T)
	}
	if !(re.T.Elem == F32 || re.T.Elem == F64) {
		failf("complex: parts must be f32 or f64, got %v", re.T)
	}
	return b.op("stablehlo.complex", re.T.WithElem(ComplexOf(re.T.Elem)), "", re, im)
}

// FFT kinds of stablehlo.fft.
const (
	FFTForward = "FFT"   // complex to complex
	FFTInverse = "IFFT"  // complex to complex, scaled by 1/n
	FFTReal    = "RFFT"  // real to complex, the onesided half of the last dimension
	FFTInvReal = "IRFFT" // onesided complex to real, scaled by 1/n
)

// FFT transforms the trailing len(lengths) dimensions of x. For RFFT the
// result's last dimension is lengths[-1]/2+1; for IRFFT the operand's last
// dimension must be lengths[-1]/2+1 and the result's is lengths[-1].
func (b *Builder) FFT(x *Value, kind string, lengths []int64) *Value {
	r, k := x.T.Rank(), len(lengths)
	if !(k >= 1 && k <= 3 && k <= r) {
		failf("fft: %d transformed dimensions of a rank-%d operand", k, r)
	}
	shape := append([]int64{}, x.T.Shape...)
	var elem Elem
	switch kind {
	case FFTForward, FFTInverse:
		if !x.T.Elem.IsComplex() {
			failf("fft: %s needs a complex operand, got %v", kind, x.T)
		}
		elem = x.T.Elem
	case FFTReal:
		if !(x.T.Elem == F32 || x.T.Elem == F64) {
			failf("fft: RFFT needs an f32 or f64 operand, got %v", x.T)
		}
		elem = ComplexOf(x.T.Elem)
		shape[r-1] = lengths[k-1]/2 + 1
	case FFTInvReal:
		if !x.T.Elem.IsComplex() {
			failf("fft: IRFFT needs a complex operand, got %v", x.T)
		}
		if x.T.Shape[r-1] != lengths[k-1]/2+1 {
			failf("fft: IRFFT of length %d needs %d inputs, got %v", lengths[k-1], lengths[k-1]/2+1, x.T)
		}
		elem = x.T.Elem.Real()
		shape[r-1] = lengths[k-1]
	default:
		panic(fmt.Errorf("hlo: fft: unknown kind %q", kind))
	}
	for i := 0; i < k-1; i++ {
		if x.T.Shape[r-k+i] != lengths[i] {
			failf("fft: dimension %d of %v is not %d", r-k+i, x.T, lengths[i])
		}
	}
	if kind != FFTInvReal && kind != FFTReal {
		if x.T.Shape[r-1] != lengths[k-1] {
			failf("fft: last dimension of %v is not %d", x.T, lengths[k-1])
		}
	}
	if kind == FFTReal {
		if x.T.Shape[r-1] != lengths[k-1] {
			failf("fft: last dimension of %v is not %d", x.T, lengths[k-1])
		}
	}
	attrs := "{fft_length = " + i64Array(lengths) + ", fft_type = #stablehlo<fft_type " + kind + ">}"
	return b.op("stablehlo.fft", T(elem, shape...), attrs, x)
}
