package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// frexpParts describes a float format for frexp's bit manipulation.
type frexpParts struct {
	bits      hlo.Elem
	mantBits  int64
	expMask   float64 // the exponent field's mask after shifting
	bias      int64   // exponent bias minus one: frexp's mantissa is in [0.5, 1)
	minNormal float64 // smallest normal magnitude
	subShift  int64   // power of two that scales a subnormal into the normal range
}

// frexpOf splits x (float32 or float64) into a mantissa in [0.5, 1) with x's
// sign and an int32 exponent, so that x = mantissa * 2**exponent. Zero, Inf
// and NaN give the value itself and exponent 0, as C's frexp does.
func frexpOf(b *hlo.Builder, x *hlo.Value) (*hlo.Value, *hlo.Value) {
	p := frexpParts{hlo.S32, 23, 0xff, 126, math.SmallestNonzeroFloat32 * (1 << 23), 24}
	if x.T.Elem == hlo.F64 {
		p = frexpParts{hlo.S64, 52, 0x7ff, 1022, 0x1p-1022, 54}
	}
	s := x.T.Shape
	num := func(e hlo.Elem, v float64) *hlo.Value { return b.BroadcastTo(b.Scalar(e, v), s) }
	zero := num(x.T.Elem, 0)
	sub := b.And(b.Compare(hlo.LT, b.Abs(x), num(x.T.Elem, p.minNormal)), b.Compare(hlo.NE, x, zero))
	scaled := b.Select(sub, b.Mul(x, num(x.T.Elem, math.Ldexp(1, int(p.subShift)))), x)
	bits := b.BitcastConvert(scaled, p.bits)
	shift := num(p.bits, float64(p.mantBits))
	expField := b.And(b.ShiftRightLogical(bits, shift), num(p.bits, p.expMask))
	e := b.Sub(expField, num(p.bits, float64(p.bias)))
	e = b.Sub(e, b.Select(sub, num(p.bits, float64(p.subShift)), num(p.bits, 0)))
	// Keep the sign and fraction, set the exponent field to bias (2**-1).
	keep := b.Not(b.ShiftLeft(num(p.bits, p.expMask), shift))
	mbits := b.Or(b.And(bits, keep), b.ShiftLeft(num(p.bits, float64(p.bias)), shift))
	mant := b.BitcastConvert(mbits, x.T.Elem)
	special := b.Or(b.Compare(hlo.EQ, x, zero), b.Not(b.IsFinite(x)))
	mant = b.Select(special, x, mant)
	e = b.Select(special, num(p.bits, 0), e)
	return mant, b.Convert(e, hlo.S32)
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
