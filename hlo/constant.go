package hlo

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
)

// Scalar literal encodings: floats print as their exact bit pattern so the
// text is canonical and loses nothing.
func literal(e Elem, v float64) string {
	switch e {
	case C64, C128:
		return "(" + literal(e.Real(), v) + "," + literal(e.Real(), 0) + ")"
	case Pred:
		if v != 0 {
			return "true"
		}
		return "false"
	case F64:
		return hexLiteral(math.Float64bits(v), 16)
	case F32:
		return hexLiteral(uint64(math.Float32bits(float32(v))), 8)
	case F16:
		return hexLiteral(uint64(Float16Bits(v)), 4)
	case BF16:
		return hexLiteral(uint64(BFloat16Bits(v)), 4)
	case F8E4M3FN, F8E5M2, F8E4M3FNUZ, F8E5M2FNUZ:
		return hexLiteral(uint64(Float8Bits(v, e)), 2)
	default:
		// Clamp before converting: float64(MaxInt64) rounds up to 2^63.
		switch {
		case v >= math.MaxInt64:
			return strconv.FormatInt(math.MaxInt64, 10)
		case v <= math.MinInt64:
			return strconv.FormatInt(math.MinInt64, 10)
		}
		return strconv.FormatInt(int64(v), 10)
	}
}

// hexLiteral writes the low digits hex digits of bits as MLIR writes a
// float's bit pattern: "0x" and upper-case digits, zero-padded.
func hexLiteral(bits uint64, digits int) string {
	const hex = "0123456789ABCDEF"
	buf := make([]byte, 2+digits)
	buf[0], buf[1] = '0', 'x'
	for i := digits - 1; i >= 0; i-- {
		buf[2+i] = hex[bits&15]
		bits >>= 4
	}
	return string(buf)
}

// Constant returns a tensor of type t filled with v (a splat).
func (b *Builder) Constant(t Type, v float64) *Value {
	return b.op("stablehlo.constant", t, "{value = dense<"+literal(t.Elem, v)+"> : "+t.String()+"}")
}

// ConstantInt returns a tensor of type t filled with the integer v, exactly
// (int64 values beyond 2^53 survive).
func (b *Builder) ConstantInt(t Type, v int64) *Value {
	if t.Elem.IsFloat() || t.Elem.IsComplex() || t.Elem == Pred {
		return b.Constant(t, float64(v))
	}
	return b.op("stablehlo.constant", t, "{value = dense<"+strconv.FormatInt(v, 10)+"> : "+t.String()+"}")
}

// ConstantComplex returns a complex tensor of type t filled with re + im*i.
func (b *Builder) ConstantComplex(t Type, re, im float64) *Value {
	if !t.Elem.IsComplex() {
		failf("constant: %v is not complex", t)
	}
	lit := "(" + literal(t.Elem.Real(), re) + "," + literal(t.Elem.Real(), im) + ")"
	return b.op("stablehlo.constant", t, "{value = dense<"+lit+"> : "+t.String()+"}")
}

// Scalar returns a rank-0 constant of element type e.
func (b *Builder) Scalar(e Elem, v float64) *Value { return b.Constant(T(e), v) }

// Float16Bits rounds v to IEEE half precision (round to nearest even) and returns its bits.
func Float16Bits(v float64) uint16 {
	f := math.Float32bits(float32(v))
	sign := uint16(f>>16) & 0x8000
	exp := int32(f>>23&0xff) - 127 + 15
	mant := f & 0x7fffff
	switch {
	case f&0x7fffffff == 0:
		return sign
	case f>>23&0xff == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++
	}
	return sign | uint16(r)
}

// BFloat16Bits rounds v to bfloat16 (round to nearest even) and returns its bits.
func BFloat16Bits(v float64) uint16 {
	f := math.Float32bits(float32(v))
	if f&0x7fffffff > 0x7f800000 {
		return uint16(f>>16) | 0x40
	}
	r := f + 0x7fff + (f>>16)&1
	return uint16(r >> 16)
}

// SplatBytes returns the little-endian bytes of one element of type e of the
// splat literal lit as Summary.Consts holds it ("dense<0x3F800000>",
// "dense<-3>", "dense<true>": the forms literal prints), or false when lit is
// no such literal of e. Complex literals are not read.
func SplatBytes(lit string, e Elem) ([]byte, bool) {
	v, ok := strings.CutPrefix(lit, "dense<")
	if v, ok = strings.CutSuffix(v, ">"); !ok {
		return nil, false
	}
	size := e.Bits() / 8
	var bits uint64
	switch {
	case v == "true" || v == "false":
		if e != Pred {
			return nil, false
		}
		if v == "true" {
			bits = 1
		}
	case strings.HasPrefix(v, "0x"):
		if !e.IsFloat() || len(v) != 2+2*size {
			return nil, false
		}
		u, err := strconv.ParseUint(v[2:], 16, 64)
		if err != nil {
			return nil, false
		}
		bits = u
	default:
		if !e.IsInt() {
			return nil, false
		}
		if e.IsUnsigned() {
			u, err := strconv.ParseUint(v, 10, size*8)
			if err != nil {
				return nil, false
			}
			bits = u
		} else {
			i, err := strconv.ParseInt(v, 10, size*8)
			if err != nil {
				return nil, false
			}
			bits = uint64(i)
		}
	}
	var out [8]byte
	binary.LittleEndian.PutUint64(out[:], bits)
	return out[:size], true
}
