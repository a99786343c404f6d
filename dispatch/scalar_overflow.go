package dispatch

import (
	"fmt"
	"math"

	"torchtpu/hlo"
)

// scalarTypeCName is the C++ type name c10's checked_convert reports for d.
func scalarTypeCName(d DType) string {
	switch d {
	case Uint8:
		return "uint8_t"
	case Int8:
		return "int8_t"
	case Int16:
		return "int16_t"
	case Int32:
		return "int"
	case Int64:
		return "int64_t"
	case Float16:
		return "c10::Half"
	case BFloat16:
		return "c10::BFloat16"
	case Float32:
		return "float"
	case Float64:
		return "double"
	}
	if d.IsFloat8() {
		return "c10::" + scalarTypeName(d)
	}
	return d.String()
}

// scalarLimits returns the lowest and highest finite values of a real dtype.
func scalarLimits(d DType) (lo, hi float64, ok bool) {
	switch d {
	case Uint8:
		return 0, math.MaxUint8, true
	case Int8:
		return math.MinInt8, math.MaxInt8, true
	case Int16:
		return math.MinInt16, math.MaxInt16, true
	case Int32:
		return math.MinInt32, math.MaxInt32, true
	case Int64:
		return math.MinInt64, math.MaxInt64, true
	case Float16:
		return -65504, 65504, true
	case BFloat16:
		return -3.3895313892515355e38, 3.3895313892515355e38, true
	case Float32:
		return -math.MaxFloat32, math.MaxFloat32, true
	}
	if e, ok := float8Elems[d]; ok {
		f, _ := hlo.Float8FormatOf(e)
		hi := f.Value(f.MaxCode)
		return -hi, hi, true
	}
	return 0, 0, false
}

// checkScalarFits fails, as c10's checked_convert does when a kernel reads a
// Python number as the tensor's element type, when scalar argument a does not
// fit dtype d: out of range of an integer type (NaN and infinities too; an
// integer may wrap into an unsigned type down to minus its maximum), finite
// and beyond the largest float, or complex with an imaginary part for a real
// type. Bool, complex and float64 take any real number.
func checkScalarFits(a Arg, d DType) error {
	fail := Errorf("value cannot be converted to type %s without overflow", scalarTypeCName(d))
	if a.Kind == ArgScalarComplex && !d.IsComplex() && d != Bool && a.Doubles[1] != 0 {
		return fail // a complex number with an imaginary part into a real type
	}
	if !a.IsScalar() || a.Kind == ArgScalarComplex || a.Kind == ArgBool || a.Kind == ArgScalarBool {
		return nil
	}
	lo, hi, ok := scalarLimits(d)
	if !ok {
		return nil
	}
	isInt := a.Kind == ArgInt || a.Kind == ArgScalarInt
	if d.IsFloat() {
		v := a.Value()
		if math.IsInf(v, 0) && d.IsFloat8() && d != Float8E5M2 {
			return fail // the float8 types but e5m2 have no infinity
		}
		if !math.IsInf(v, 0) && !math.IsNaN(v) && (v < lo || v > hi) {
			return fail
		}
		return nil
	}
	if isInt {
		if d == Uint8 && a.Int < 0 {
			if -a.Int > int64(hi) {
				return fail
			}
			return nil
		}
		if d != Int64 && (float64(a.Int) < lo || float64(a.Int) > hi) {
			return fail
		}
		return nil
	}
	if v := a.Value(); math.IsNaN(v) || v < lo || v > hi {
		return fail
	}
	return nil
}

// cDouble formats v as C++'s default stream output of a double does, the way
// CPU's messages print numbers: six significant digits, nan and inf spelled
// in lower case.
func cDouble(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.6g", v)
}
