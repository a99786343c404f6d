// Package dispatch is the op table: for each ATen overload a rule that checks
// shapes and dtypes with PyTorch's semantics and lowers the op to StableHLO.
// In-place and out= variants are derived from the functional rule.
package dispatch

import (
	"fmt"

	"torchtpu/hlo"
)

// DType is a c10::ScalarType code.
type DType int32

// The ScalarType codes torchtpu supports.
const (
	Uint8    DType = 0
	Int8     DType = 1
	Int16    DType = 2
	Int32    DType = 3
	Int64    DType = 4
	Float16  DType = 5
	Float32  DType = 6
	Float64  DType = 7
	Bool     DType = 11
	BFloat16 DType = 15
	// Undefined marks "no dtype yet" in promotion.
	Undefined DType = -1
)

// The wide unsigned ScalarType codes. The device holds them (copies, creation,
// comparisons, and ops that convert them to float); PyTorch promotes them with
// no other integer type, and its CPU kernels take them for few ops.
const (
	UInt16 DType = 27
	UInt32 DType = 28
	UInt64 DType = 29
)

// The complex ScalarType codes. ComplexHalf (complex32) has no XLA element
// type: rules compute it as complex64 (its Elem), as PyTorch's CPU kernels
// compute it in complex<float>, and a storage holds it as float16 (real,
// imaginary) pairs, CPU's bytes (engine/stored.go). Only the ops CPU
// implements for it run on tpu for it (ComplexHalfOp).
const (
	ComplexHalf DType = 8
	Complex64   DType = 9
	Complex128  DType = 10
)

// The float8 ScalarType codes. Storages hold them in their XLA float8
// element types (StoredElem), CPU's bytes; rules compute them as float32
// (their Elem), as CPU's kernels compute them in float, and a result is
// rounded to its float8 dtype as it is stored, with CPU's rounding
// (hlo.Float8Bits). Only the ops CPU implements for them run on tpu for
// them (Float8Op).
const (
	Float8E5M2     DType = 23
	Float8E4M3FN   DType = 24
	Float8E5M2FNUZ DType = 25
	Float8E4M3FNUZ DType = 26
)

// float8Elems maps each float8 dtype to the element type its storages hold.
var float8Elems = map[DType]hlo.Elem{
	Float8E5M2: hlo.F8E5M2, Float8E4M3FN: hlo.F8E4M3FN, Float8E5M2FNUZ: hlo.F8E5M2FNUZ, Float8E4M3FNUZ: hlo.F8E4M3FNUZ,
}

var dtypeInfo = map[DType]struct {
	name string
	elem hlo.Elem
	size int
}{
	Uint8: {"uint8", hlo.U8, 1}, Int8: {"int8", hlo.S8, 1}, Int16: {"int16", hlo.S16, 2},
	Int32: {"int32", hlo.S32, 4}, Int64: {"int64", hlo.S64, 8}, Float16: {"float16", hlo.F16, 2},
	Float32: {"float32", hlo.F32, 4}, Float64: {"float64", hlo.F64, 8}, Bool: {"bool", hlo.Pred, 1},
	BFloat16: {"bfloat16", hlo.BF16, 2}, Complex64: {"complex64", hlo.C64, 8},
	Complex128: {"complex128", hlo.C128, 16}, ComplexHalf: {"complex32", hlo.C64, 4}, UInt64: {"uint64", hlo.U64, 8},
	UInt16: {"uint16", hlo.U16, 2}, UInt32: {"uint32", hlo.U32, 4},
	Float8E5M2: {"float8_e5m2", hlo.F32, 1}, Float8E4M3FN: {"float8_e4m3fn", hlo.F32, 1},
	Float8E5M2FNUZ: {"float8_e5m2fnuz", hlo.F32, 1}, Float8E4M3FNUZ: {"float8_e4m3fnuz", hlo.F32, 1},
}

// Supported reports whether d is a dtype the device can hold.
func (d DType) Supported() bool { _, ok := dtypeInfo[d]; return ok }

// String returns PyTorch's name of d, e.g. "float32".
func (d DType) String() string {
	if i, ok := dtypeInfo[d]; ok {
		return i.name
	}
	return fmt.Sprintf("dtype(%d)", int32(d))
}

// Elem returns the StableHLO element type rules compute d in: d's own,
// except complex64 for complex32 and float32 for the float8 dtypes.
func (d DType) Elem() hlo.Elem { return dtypeInfo[d].elem }

// StoredElem returns the element type a storage of dtype d holds: Elem,
// except the float8 types for the float8 dtypes and float16 (pairs) for
// complex32.
func (d DType) StoredElem() hlo.Elem {
	if e, ok := float8Elems[d]; ok {
		return e
	}
	if d == ComplexHalf {
		return hlo.F16
	}
	return d.Elem()
}

// Size returns the bytes per element of d.
func (d DType) Size() int { return dtypeInfo[d].size }

// IsFloat reports whether d is a floating-point dtype, float8 included.
func (d DType) IsFloat() bool {
	return d == Float16 || d == BFloat16 || d == Float32 || d == Float64 || d.IsFloat8()
}

// IsFloat8 reports whether d is one of the float8 dtypes.
func (d DType) IsFloat8() bool { _, ok := float8Elems[d]; return ok }

// IsComplex reports whether d is a complex dtype.
func (d DType) IsComplex() bool { return d == Complex64 || d == Complex128 || d == ComplexHalf }

// ToReal returns the dtype of d's real and imaginary parts (d itself when d
// is not complex), as c10::toRealValueType does.
func (d DType) ToReal() DType {
	switch d {
	case Complex64:
		return Float32
	case Complex128:
		return Float64
	case ComplexHalf:
		return Float16
	}
	return d
}

// ToComplex returns the complex dtype whose parts are of dtype d, as
// c10::toComplexType does (d itself when d is complex).
func (d DType) ToComplex() DType {
	switch d {
	case Float64, Complex128:
		return Complex128
	case Float16, ComplexHalf:
		return ComplexHalf
	}
	return Complex64
}

// IsIntegral reports whether d is an integer dtype, counting bool when withBool.
func (d DType) IsIntegral(withBool bool) bool {
	switch d {
	case Uint8, Int8, Int16, Int32, Int64, UInt16, UInt32, UInt64:
		return true
	case Bool:
		return withBool
	}
	return false
}

// FromElem returns the dtype whose element type is e (complex64 for
// complex<f32>, float32 for f32: a complex32 or float8 result is named by
// the op, Ctx.ResultDType).
func FromElem(e hlo.Elem) DType {
	for d, i := range dtypeInfo {
		if i.elem == e && d != ComplexHalf && !d.IsFloat8() {
			return d
		}
	}
	panic("dispatch: no dtype for element type " + string(e))
}
