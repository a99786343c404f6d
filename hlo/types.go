// Package hlo builds StableHLO modules and prints them as canonical MLIR text:
// the same graph always gives the same bytes, so the text can key a compile cache.
package hlo

import (
	"fmt"
	"strconv"
	"strings"
)

// Elem is a StableHLO element type, spelled as MLIR spells it.
type Elem string

// The element types torchtpu uses.
const (
	Pred Elem = "i1"
	S8   Elem = "i8"
	S16  Elem = "i16"
	S32  Elem = "i32"
	S64  Elem = "i64"
	U8   Elem = "ui8"
	U16  Elem = "ui16"
	U32  Elem = "ui32"
	U64  Elem = "ui64"
	F16  Elem = "f16"
	BF16 Elem = "bf16"
	F32  Elem = "f32"
	F64  Elem = "f64"
	C64  Elem = "complex<f32>"
	C128 Elem = "complex<f64>"
	// The float8 types: storage types only, computed in f32 (see Float8Bits).
	F8E4M3FN   Elem = "f8E4M3FN"
	F8E5M2     Elem = "f8E5M2"
	F8E4M3FNUZ Elem = "f8E4M3FNUZ"
	F8E5M2FNUZ Elem = "f8E5M2FNUZ"
)

// IsFloat reports whether e is a floating-point type, float8 included.
func (e Elem) IsFloat() bool { return e == F16 || e == BF16 || e == F32 || e == F64 || e.IsFloat8() }

// IsFloat8 reports whether e is one of the float8 types.
func (e Elem) IsFloat8() bool { _, ok := float8Formats[e]; return ok }

// IsComplex reports whether e is a complex type.
func (e Elem) IsComplex() bool { return e == C64 || e == C128 }

// Real returns the element type of e's real and imaginary parts (e itself
// when e is not complex).
func (e Elem) Real() Elem {
	switch e {
	case C64:
		return F32
	case C128:
		return F64
	}
	return e
}

// ComplexOf returns the complex type whose parts are of type e: complex<f64>
// for f64, complex<f32> for the other floats, e itself when e is complex.
func ComplexOf(e Elem) Elem {
	switch e {
	case F64, C128:
		return C128
	}
	return C64
}

// IsInt reports whether e is a signed or unsigned integer type (not bool).
func (e Elem) IsInt() bool {
	return e == S8 || e == S16 || e == S32 || e == S64 || e == U8 || e == U16 || e == U32 || e == U64
}

// IsUnsigned reports whether e is an unsigned integer type.
func (e Elem) IsUnsigned() bool { return e == U8 || e == U16 || e == U32 || e == U64 }

// Bits returns the width of e in bits.
func (e Elem) Bits() int {
	switch e {
	case Pred, S8, U8, F8E4M3FN, F8E5M2, F8E4M3FNUZ, F8E5M2FNUZ:
		return 8
	case S16, U16, F16, BF16:
		return 16
	case S32, U32, F32:
		return 32
	case C128:
		return 128
	default:
		return 64
	}
}

// Type is a ranked tensor type.
type Type struct {
	Shape []int64
	Elem  Elem
}

// T returns the tensor type of elem with the given dimensions.
func T(elem Elem, dims ...int64) Type { return Type{Shape: append([]int64{}, dims...), Elem: elem} }

// Rank returns the number of dimensions of t.
func (t Type) Rank() int { return len(t.Shape) }

// NumElements returns the product of t's dimensions.
func (t Type) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// String prints t as MLIR does, e.g. tensor<2x3xf32>.
func (t Type) String() string {
	var sb strings.Builder
	sb.WriteString("tensor<")
	for _, d := range t.Shape {
		sb.WriteString(strconv.FormatInt(d, 10))
		sb.WriteByte('x')
	}
	sb.WriteString(string(t.Elem))
	sb.WriteByte('>')
	return sb.String()
}

// Equal reports whether t and u are the same type.
func (t Type) Equal(u Type) bool {
	if t.Elem != u.Elem || len(t.Shape) != len(u.Shape) {
		return false
	}
	for i := range t.Shape {
		if t.Shape[i] != u.Shape[i] {
			return false
		}
	}
	return true
}

// WithElem returns t with its element type replaced by e.
func (t Type) WithElem(e Elem) Type { return Type{Shape: append([]int64{}, t.Shape...), Elem: e} }

func i64Array(xs []int64) string {
	if len(xs) == 0 {
		return "array<i64>"
	}
	return string(appendInts(append(make([]byte, 0, 12+4*len(xs)), "array<i64: "...), xs, ">"))
}

func intList(xs []int64) string {
	return string(appendInts(append(make([]byte, 0, 2+4*len(xs)), '['), xs, "]"))
}

// appendInts appends xs separated by ", ", then end.
func appendInts(buf []byte, xs []int64, end string) []byte {
	for i, x := range xs {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = strconv.AppendInt(buf, x, 10)
	}
	return append(buf, end...)
}

// failf panics with an hlo error: a builder's checks call it only when they
// fail, so that their message arguments are not boxed on every op.
func failf(format string, args ...any) {
	panic(fmt.Errorf("hlo: "+format, args...))
}
