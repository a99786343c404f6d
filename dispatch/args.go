package dispatch

import (
	"fmt"
	"strings"

	"torchtpu/hlo"
)

// ArgKind tells what an Arg holds; the values match bridge/torchtpu.h.
type ArgKind int32

// Argument kinds.
const (
	ArgNone ArgKind = iota
	ArgTensor
	ArgInt
	ArgDouble
	ArgBool
	ArgIntList
	ArgTensorList
	ArgString
	ArgDoubleList
	ArgBoolList
	ArgScalarInt
	ArgScalarDouble
	ArgScalarBool
	// ArgScalarComplex is a complex Python number: Doubles holds its real
	// and imaginary parts, Double its real part.
	ArgScalarComplex
)

// TensorMeta is what a rule may know about a tensor argument without reading it.
type TensorMeta struct {
	Sizes []int64
	DType DType
	// ZeroDimCPU marks a zero-dimensional CPU tensor passed alongside device tensors.
	ZeroDimCPU bool
	// Number marks a Python number that PyTorch wrapped as a zero-dimensional CPU tensor;
	// type promotion treats it as a number, not a tensor.
	Number bool
	// Defined is false for an undefined tensor (an absent optional in a list).
	Defined bool
	// Strides are the view's strides in elements; nil when the caller does not know them.
	// Rules compute on values, so only ops whose results depend on memory layout read them.
	Strides []int64
}

// Rank returns the number of dimensions.
func (m TensorMeta) Rank() int { return len(m.Sizes) }

// Numel returns the element count.
func (m TensorMeta) Numel() int64 { return numel(m.Sizes) }

// Type returns the StableHLO type of the tensor's value.
func (m TensorMeta) Type() hlo.Type { return hlo.T(m.DType.Elem(), m.Sizes...) }

// String prints the meta as "[2, 3] float32".
func (m TensorMeta) String() string { return fmt.Sprintf("%s %s", shapeString(m.Sizes), m.DType) }

// Arg is one marshalled schema argument. Tensors carry an engine handle that
// the Reader resolves.
type Arg struct {
	Kind    ArgKind
	Int     int64
	Double  float64
	Ints    []int64
	Doubles []float64
	Str     string
	Tensors []TensorMeta
	Handles []any // one per tensor; opaque to dispatch
}

// IsScalar reports whether a holds a Python number.
func (a Arg) IsScalar() bool {
	return a.Kind == ArgScalarInt || a.Kind == ArgScalarDouble || a.Kind == ArgScalarBool || a.Kind == ArgScalarComplex ||
		a.Kind == ArgInt || a.Kind == ArgDouble || a.Kind == ArgBool
}

// ScalarDType returns the dtype PyTorch gives a Python number of a's kind.
func (a Arg) ScalarDType() DType {
	switch a.Kind {
	case ArgScalarDouble, ArgDouble:
		return Float64
	case ArgScalarBool, ArgBool:
		return Bool
	case ArgScalarComplex:
		return Complex128
	}
	return Int64
}

// Value returns a's number as a float64.
func (a Arg) Value() float64 {
	if a.Kind == ArgScalarDouble || a.Kind == ArgDouble || a.Kind == ArgScalarComplex {
		return a.Double
	}
	return float64(a.Int)
}

// String describes a for error messages.
func (a Arg) String() string {
	switch a.Kind {
	case ArgNone:
		return "None"
	case ArgTensor:
		return a.Tensors[0].String()
	case ArgTensorList:
		parts := make([]string, len(a.Tensors))
		for i, t := range a.Tensors {
			parts[i] = t.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case ArgInt, ArgScalarInt:
		return fmt.Sprint(a.Int)
	case ArgBool, ArgScalarBool:
		return fmt.Sprint(a.Int != 0)
	case ArgDouble, ArgScalarDouble:
		return fmt.Sprint(a.Double)
	case ArgIntList, ArgBoolList:
		return shapeString(a.Ints)
	case ArgDoubleList:
		return fmt.Sprint(a.Doubles)
	case ArgScalarComplex:
		return fmt.Sprint(complex(a.Doubles[0], a.Doubles[1]))
	case ArgString:
		return fmt.Sprintf("%q", a.Str)
	}
	return "?"
}

func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func numel(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}
