package dispatch

import "testing"

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
			if got, want := PromoteTypes(a, b), promoteTable[i][j]; got != want {
				t.Errorf("PromoteTypes(%s, %s) = %s, want %s", a, b, got, want)
			}
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
		if got := ResultType(c.ops...); got != c.want {
			t.Errorf("%s: ResultType = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPromoteComplex(t *testing.T) {
	cases := []struct{ a, b, want DType }{
		{Complex64, Float64, Complex128}, {Complex64, Float32, Complex64}, {Complex64, Int64, Complex64},
		{Complex128, Float16, Complex128}, {Bool, Complex64, Complex64}, {Complex64, Complex128, Complex128},
		{BFloat16, Complex64, Complex64},
	}
	for _, c := range cases {
		if got := PromoteTypes(c.a, c.b); got != c.want {
			t.Errorf("PromoteTypes(%s, %s) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	// A zero-dimensional complex tensor with a float64 tensor gives complex128.
	if got := ResultType(Operand{Float64, KindDim}, Operand{Complex64, KindZeroDim}); got != Complex128 {
		t.Errorf("result_type(float64[2], complex64[]) = %s", got)
	}
	if got := ResultType(Operand{Int64, KindDim}, Operand{Complex128, KindWrapped}); got != Complex64 {
		t.Errorf("result_type(int64[2], 1j) = %s", got)
	}
	if CanCast(Complex64, Float32) || !CanCast(Float32, Complex64) {
		t.Error("CanCast with complex")
	}
}
