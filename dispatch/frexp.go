package dispatch

import "torchtpu/hlo"

// frexpParts describes a float format for frexp's bit manipulation.
type frexpParts struct {
	bits     hlo.Elem // the integer type of the same width
	mantBits int64    // fraction bits
	expMask  float64  // the exponent field's mask after shifting
	bias     int64    // exponent bias minus one: frexp's mantissa is in [0.5, 1)
	subExp   int64    // a subnormal is its fraction times 2**-subExp
}

func frexpFormat(e hlo.Elem) frexpParts {
	if e == hlo.F64 {
		return frexpParts{hlo.S64, 52, 0x7ff, 1022, 1074}
	}
	return frexpParts{hlo.S32, 23, 0xff, 126, 149}
}

// frexpNormal splits the bits of normal numbers: the mantissa bits (sign and
// fraction kept, exponent set to 2**-1) and the exponent. It uses integer
// operations only, since the backend may flush subnormals in float arithmetic.
func frexpNormal(b *hlo.Builder, p frexpParts, bits *hlo.Value) (*hlo.Value, *hlo.Value) {
	s := bits.T.Shape
	num := func(v float64) *hlo.Value { return b.BroadcastTo(b.Scalar(p.bits, v), s) }
	shift := num(float64(p.mantBits))
	field := b.And(b.ShiftRightLogical(bits, shift), num(p.expMask))
	keep := b.Not(b.ShiftLeft(num(p.expMask), shift))
	mant := b.Or(b.And(bits, keep), b.ShiftLeft(num(float64(p.bias)), shift))
	return mant, b.Sub(field, num(float64(p.bias)))
}

// frexpOf splits x (float32 or float64) into a mantissa in [0.5, 1) with x's
// sign and an int32 exponent, so that x = mantissa * 2**exponent. Zero, Inf
// and NaN give the value itself and exponent 0, as C's frexp does. A
// subnormal's fraction, converted exactly to a normal float, gives its
// mantissa; its exponent is shifted by the subnormal scale.
func frexpOf(b *hlo.Builder, x *hlo.Value) (*hlo.Value, *hlo.Value) {
	p := frexpFormat(x.T.Elem)
	s := x.T.Shape
	num := func(v float64) *hlo.Value { return b.BroadcastTo(b.Scalar(p.bits, v), s) }
	bits := b.BitcastConvert(x, p.bits)
	shift := num(float64(p.mantBits))
	field := b.And(b.ShiftRightLogical(bits, shift), num(p.expMask))
	fracMask := b.Sub(b.ShiftLeft(num(1), shift), num(1))
	frac := b.And(bits, fracMask)
	sign := b.And(bits, b.ShiftLeft(num(1), num(float64(p.bits.Bits()-1))))
	zero := num(0)

	mant, e := frexpNormal(b, p, bits)
	subBits := b.BitcastConvert(b.Convert(frac, x.T.Elem), p.bits)
	subMant, subE := frexpNormal(b, p, subBits)
	subMant = b.Or(subMant, sign)
	subE = b.Sub(subE, num(float64(p.subExp)))
	sub := b.And(b.Compare(hlo.EQ, field, zero), b.Compare(hlo.NE, frac, zero))
	mant = b.Select(sub, subMant, mant)
	e = b.Select(sub, subE, e)

	special := b.Or(b.Compare(hlo.EQ, b.Or(field, frac), zero), b.Compare(hlo.EQ, field, num(p.expMask)))
	mant = b.Select(special, bits, mant)
	e = b.Select(special, zero, e)
	return b.BitcastConvert(mant, x.T.Elem), b.Convert(e, hlo.S32)
}

// frexpRule is frexp.Tensor(self): (mantissa, exponent); half types are
// computed in float32 as CPU does, and the mantissa is exact in them.
func frexpRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() {
		return nil, Errorf("torch.frexp() only supports floating-point dtypes")
	}
	x := c.T(0)
	if m.DType != Float64 {
		x = c.B.Convert(x, hlo.F32)
	}
	mant, e := frexpOf(c.B, x)
	return []*hlo.Value{c.B.Convert(mant, m.DType.Elem()), e}, nil
}

func init() {
	def("aten::frexp.Tensor", frexpRule, "aten::frexp.Tensor_out")
}
