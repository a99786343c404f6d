package engine

import (
	"encoding/binary"
	"math"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// pjrtType returns the PJRT buffer type of a StableHLO element type.
func pjrtType(e hlo.Elem) pjrt.DType {
	switch e {
	case hlo.Pred:
		return pjrt.PRED
	case hlo.S8:
		return pjrt.S8
	case hlo.S16:
		return pjrt.S16
	case hlo.S32:
		return pjrt.S32
	case hlo.S64:
		return pjrt.S64
	case hlo.U8:
		return pjrt.U8
	case hlo.U16:
		return pjrt.U16
	case hlo.U32:
		return pjrt.U32
	case hlo.U64:
		return pjrt.U64
	case hlo.F16:
		return pjrt.F16
	case hlo.BF16:
		return pjrt.BF16
	case hlo.F32:
		return pjrt.F32
	case hlo.F64:
		return pjrt.F64
	case hlo.C64:
		return pjrt.C64
	case hlo.C128:
		return pjrt.C128
	case hlo.F8E4M3FN:
		return pjrt.F8E4M3FN
	case hlo.F8E5M2:
		return pjrt.F8E5M2
	case hlo.F8E4M3FNUZ:
		return pjrt.F8E4M3FNUZ
	case hlo.F8E5M2FNUZ:
		return pjrt.F8E5M2FNUZ
	}
	panic("engine: no PJRT type for " + string(e))
}

// encodeScalar returns the little-endian bytes of v as element type e.
// A complex e gets v as its real part and a zero imaginary part.
func encodeScalar(v float64, e hlo.Elem) []byte {
	if e.IsComplex() {
		re := encodeScalar(v, e.Real())
		return append(re, make([]byte, len(re))...)
	}
	b := make([]byte, 8)
	if e.IsFloat8() {
		return []byte{hlo.Float8Bits(v, e)}
	}
	switch e {
	case hlo.Pred:
		if v != 0 {
			b[0] = 1
		}
		return b[:1]
	case hlo.S8, hlo.U8:
		b[0] = byte(int64(v))
		return b[:1]
	case hlo.S16, hlo.U16:
		binary.LittleEndian.PutUint16(b, uint16(int64(v)))
		return b[:2]
	case hlo.S32, hlo.U32:
		binary.LittleEndian.PutUint32(b, uint32(int64(v)))
		return b[:4]
	case hlo.S64, hlo.U64:
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
		return b
	case hlo.F16:
		binary.LittleEndian.PutUint16(b, hlo.Float16Bits(v))
		return b[:2]
	case hlo.BF16:
		binary.LittleEndian.PutUint16(b, hlo.BFloat16Bits(v))
		return b[:2]
	case hlo.F32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
		return b[:4]
	}
	binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	return b
}

// encodeInt returns the little-endian bytes of the integer v as element type e.
func encodeInt(v int64, e hlo.Elem) []byte {
	if e.IsFloat() || e.IsComplex() {
		return encodeScalar(float64(v), e)
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(v))
	return b[:e.Bits()/8]
}

// decodeScalar reads one element of type e from b as a float64 (the real
// part of a complex element).
func decodeScalar(b []byte, e hlo.Elem) float64 {
	if e.IsFloat8() {
		return hlo.Float8Value(b[0], e)
	}
	switch e {
	case hlo.C64:
		return decodeScalar(b, hlo.F32)
	case hlo.Pred, hlo.U8:
		return float64(b[0])
	case hlo.S8:
		return float64(int8(b[0]))
	case hlo.S16:
		return float64(int16(binary.LittleEndian.Uint16(b)))
	case hlo.S32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case hlo.U16:
		return float64(binary.LittleEndian.Uint16(b))
	case hlo.U32:
		return float64(binary.LittleEndian.Uint32(b))
	case hlo.S64:
		return float64(int64(binary.LittleEndian.Uint64(b)))
	case hlo.U64:
		return float64(binary.LittleEndian.Uint64(b))
	case hlo.F16:
		return float16ToFloat(binary.LittleEndian.Uint16(b))
	case hlo.BF16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	case hlo.F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

func float16ToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * mant * math.Pow(2, -24)
	case 31:
		if mant != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + mant/1024) * math.Pow(2, float64(exp-15))
}
