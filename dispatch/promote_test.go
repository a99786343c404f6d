package dispatch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// promoteTable[i][j] is torch.promote_types(dtypes[i], dtypes[j]) as PyTorch
// 2.15 computes it.
var promoteTable = [10][10]DType{
	{Uint8, Int16, Int16, Int32, Int64, Float16, Float32, Float64, Uint8, BFloat16},
	{Int16, Int8, Int16, Int32, Int64, Float16, Float32, Float64, Int8, BFloat16},
	{Int16, Int16, Int16, Int32, Int64, Float16, Float32, Float64, Int16, BFloat16},
	{Int32, Int32, Int32, Int32, Int64, Float16, Float32, Float64, Int32, BFloat16},
	{Int64, Int64, Int64, Int64, Int64, Float16, Float32, Float64, Int64, BFloat16},
	{Float16, Float16, Float16, Float16, Float16, Float16, Float32, Float64, Float16, Float32},
	{Float32, Float32, Float32, Float32, Float32, Float32, Float32, Float64, Float32, Float32},
	{Float64, Float64, Float64, Float64, Float64, Float64, Float64, Float64, Float64, Float64},
	{Uint8, Int8, Int16, Int32, Int64, Float16, Float32, Float64, Bool, BFloat16},
	{BFloat16, BFloat16, BFloat16, BFloat16, BFloat16, Float32, Float32, Float64, BFloat16, BFloat16},
}

var allDTypes = [10]DType{Uint8, Int8, Int16, Int32, Int64, Float16, Float32, Float64, Bool, BFloat16}

func TestPromoteTypesTable(t *testing.T) {
	for i, a := range allDTypes {
		for j, b := range allDTypes {
			assert.Equal(t, promoteTable[i][j], PromoteTypes(a, b), "PromoteTypes(%s, %s)", a, b)
		}
	}
}

func TestResultType(t *testing.T) {
	cases := []struct {
		name string
		ops  []Operand
		want DType
	}{
		{"int tensor + python float", []Operand{{Int32, KindDim}, {Float64, KindWrapped}}, Float32},
		{"int64 tensor + python float", []Operand{{Int64, KindDim}, {Float64, KindWrapped}}, Float32},
		{"bool tensor + python int", []Operand{{Bool, KindDim}, {Int64, KindWrapped}}, Int64},
		{"bool tensor + python bool", []Operand{{Bool, KindDim}, {Bool, KindWrapped}}, Bool},
		{"int32 tensor + zero-dim int64", []Operand{{Int32, KindDim}, {Int64, KindZeroDim}}, Int32},
		{"int32 tensor + zero-dim float64", []Operand{{Int32, KindDim}, {Float64, KindZeroDim}}, Float64},
		{"float16 tensor + zero-dim float64", []Operand{{Float16, KindDim}, {Float64, KindZeroDim}}, Float16},
		{"uint8 + int8", []Operand{{Uint8, KindDim}, {Int8, KindDim}}, Int16},
		{"float16 + bfloat16", []Operand{{Float16, KindDim}, {BFloat16, KindDim}}, Float32},
		{"uint8 tensor + python int", []Operand{{Uint8, KindDim}, {Int64, KindWrapped}}, Uint8},
		{"float16 tensor + python float", []Operand{{Float16, KindDim}, {Float64, KindWrapped}}, Float16},
		{"zero-dim int + python float", []Operand{{Int64, KindZeroDim}, {Float64, KindWrapped}}, Float32},
		{"two python numbers", []Operand{{Int64, KindWrapped}, {Float64, KindWrapped}}, Float32},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, ResultType(c.ops...), c.name)
	}
}

func TestPromoteComplex(t *testing.T) {
	cases := []struct{ a, b, want DType }{
		{Complex64, Float64, Complex128}, {Complex64, Float32, Complex64}, {Complex64, Int64, Complex64},
		{Complex128, Float16, Complex128}, {Bool, Complex64, Complex64}, {Complex64, Complex128, Complex128},
		{BFloat16, Complex64, Complex64},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, PromoteTypes(c.a, c.b), "PromoteTypes(%s, %s)", c.a, c.b)
	}
	// A zero-dimensional complex tensor with a float64 tensor gives complex128.
	assert.Equal(t, Complex128, ResultType(Operand{Float64, KindDim}, Operand{Complex64, KindZeroDim}), "result_type(float64[2], complex64[])")
	assert.Equal(t, Complex64, ResultType(Operand{Int64, KindDim}, Operand{Complex128, KindWrapped}), "result_type(int64[2], 1j)")
	assert.False(t, CanCast(Complex64, Float32), "CanCast(complex64, float32)")
	assert.True(t, CanCast(Float32, Complex64), "CanCast(float32, complex64)")
}

// broadcastCases are the shapes PyTorch's elementwise ops broadcast to; a
// case with err fails with the wording of those ops (torch.ones(2, 3) +
// torch.ones(4) on CPU).
var broadcastCases = []struct {
	shapes [][]int64
	want   []int64
	err    string
}{
	{[][]int64{{2, 3}, {2, 3}}, []int64{2, 3}, ""},
	{[][]int64{{2, 3}, {3}}, []int64{2, 3}, ""},
	{[][]int64{{2, 1}, {1, 3}}, []int64{2, 3}, ""},
	{[][]int64{{4, 1, 3}, {5, 1}}, []int64{4, 5, 3}, ""},
	{[][]int64{{}, {2, 3}}, []int64{2, 3}, ""},
	{[][]int64{{}, {}}, []int64{}, ""},
	{[][]int64{{0, 3}, {1, 3}}, []int64{0, 3}, ""},
	{[][]int64{{2, 1, 1}, {3, 1}, {4}}, []int64{2, 3, 4}, ""},
	{[][]int64{{2, 3}, {4}}, nil, "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"},
	{[][]int64{{2, 3}, {3, 3}}, nil, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"},
	{[][]int64{{0}, {2}}, nil, "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0"},
}

func TestBroadcastShapesTable(t *testing.T) {
	for _, c := range broadcastCases {
		got, err := BroadcastShapes(c.shapes...)
		if c.err != "" {
			require.Error(t, err, "BroadcastShapes%v = %v, want an error", c.shapes, got)
			assert.Contains(t, err.Error(), c.err, "BroadcastShapes%v", c.shapes)
			continue
		}
		require.NoError(t, err, "BroadcastShapes%v", c.shapes)
		assert.Equal(t, c.want, got, "BroadcastShapes%v", c.shapes)
	}
}
