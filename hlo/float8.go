package hlo

import "math"

// Float8Format describes one float8 element type: its field widths and how
// it spells the values IEEE formats have and it may lack.
type Float8Format struct {
	// Mant is the number of mantissa bits, Bias the exponent bias.
	Mant, Bias int
	// MaxCode is the bit pattern of the largest finite value.
	MaxCode uint8
	// Inf is the pattern of +infinity, 0 when the format has none.
	Inf uint8
	// NaN is the pattern of a positive NaN (with the sign bit for the
	// formats whose NaN is signed).
	NaN uint8
	// Unsigned zero (the "fnuz" formats): 0x80 is the one NaN, so there is
	// no negative zero and a NaN carries no sign.
	FNUZ bool
	// Saturates says whether values past the largest finite one (infinities
	// included) round to it rather than to NaN or infinity, as PyTorch's
	// conversion to float8_e4m3fn does.
	Saturates bool
}

var float8Formats = map[Elem]Float8Format{
	F8E4M3FN:   {Mant: 3, Bias: 7, MaxCode: 0x7E, NaN: 0x7F, Saturates: true},
	F8E5M2:     {Mant: 2, Bias: 15, MaxCode: 0x7B, Inf: 0x7C, NaN: 0x7F},
	F8E4M3FNUZ: {Mant: 3, Bias: 8, MaxCode: 0x7F, NaN: 0x80, FNUZ: true},
	F8E5M2FNUZ: {Mant: 2, Bias: 16, MaxCode: 0x7F, NaN: 0x80, FNUZ: true},
}

// Float8FormatOf returns the format of the float8 type e; ok is false when e
// is not one.
func Float8FormatOf(e Elem) (f Float8Format, ok bool) {
	f, ok = float8Formats[e]
	return f, ok
}

// Float8Bits rounds v to the float8 type e and returns its bits, as PyTorch
// (c10) converts: v is first rounded to float32, then to nearest even in e.
// Past the largest finite value float8_e4m3fn saturates (infinities too),
// float8_e5m2 overflows to infinity and the fnuz types to their NaN; a NaN
// becomes the format's NaN (keeping its sign where NaNs are signed), and the
// fnuz types round a negative number too small for them to +0.
func Float8Bits(v float64, e Elem) uint8 {
	f, ok := float8Formats[e]
	if !ok {
		failf("Float8Bits: %s is not a float8 type", e)
	}
	return f.FromFloat32(math.Float32bits(float32(v)))
}

// FromFloat32 returns the pattern of f nearest to the float32 with bits x
// (see Float8Bits).
func (f Float8Format) FromFloat32(x uint32) uint8 {
	sign := uint8(x>>24) & 0x80
	abs := x & 0x7fffffff
	var code uint64
	switch {
	case abs > 0x7f800000:
		code = uint64(f.NaN)
	case abs == 0x7f800000:
		code = uint64(f.overflow())
	default:
		if code = f.roundAbs(abs); code > uint64(f.MaxCode) {
			code = uint64(f.overflow())
		}
	}
	if f.FNUZ && (code == 0 || code == 0x80) {
		return uint8(code) // +0, and the one NaN
	}
	return sign | uint8(code)
}

// overflow returns the unsigned pattern a value past the largest finite
// one becomes.
func (f Float8Format) overflow() uint8 {
	switch {
	case f.Saturates:
		return f.MaxCode
	case f.Inf != 0:
		return f.Inf
	}
	return f.NaN
}

// roundAbs returns the pattern, possibly beyond MaxCode, of the finite
// non-negative float32 with bits abs rounded to nearest even.
func (f Float8Format) roundAbs(abs uint32) uint64 {
	exp := int(abs>>23) - 127
	if abs>>23 == 0 {
		return 0 // float32 subnormals are far below every float8 subnormal
	}
	mant := uint64(abs&0x7fffff | 0x800000) // 24 bits with the implicit one
	minExp := 1 - f.Bias
	// The float8 pattern is mant >> shift, its exponent field added above the
	// mantissa; the carry of rounding moves into the exponent by itself.
	var shift int
	var base uint64
	if exp < minExp {
		shift = 23 - f.Mant + (minExp - exp)
	} else {
		shift = 23 - f.Mant
		base = uint64(exp-minExp) << f.Mant // exponent field minus one; the implicit one adds it
	}
	if shift > 40 {
		return 0
	}
	q := mant >> shift
	rem := mant & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return base + q
}

// Float8Value returns the value of the float8 pattern x of type e.
func Float8Value(x uint8, e Elem) float64 {
	f, ok := float8Formats[e]
	if !ok {
		failf("Float8Value: %s is not a float8 type", e)
	}
	return f.Value(x)
}

// Value returns the value of the pattern x of f.
func (f Float8Format) Value(x uint8) float64 {
	if f.FNUZ && x == 0x80 {
		return math.NaN()
	}
	sign := 1.0
	if x&0x80 != 0 {
		sign = -1
	}
	abs := x & 0x7f
	switch {
	case f.Inf != 0 && abs == f.Inf:
		return sign * math.Inf(1)
	case abs > f.MaxCode && (f.Inf == 0 || abs > f.Inf):
		return math.NaN()
	}
	exp := int(abs >> f.Mant)
	mant := float64(abs & (1<<f.Mant - 1))
	scale := float64(int(1) << f.Mant)
	if exp == 0 {
		return sign * mant / scale * math.Ldexp(1, 1-f.Bias)
	}
	return sign * (1 + mant/scale) * math.Ldexp(1, exp-f.Bias)
}
