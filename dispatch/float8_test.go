package dispatch

import (
	"math"
	"strings"
	"testing"

	"torchtpu/hlo"
)

// TestFloat8DTypeTable checks each float8 dtype's entry: PyTorch's names and
// ScalarType code, one byte, computed as float32, stored in its XLA type.
func TestFloat8DTypeTable(t *testing.T) {
	cases := []struct {
		d              DType
		code           int32
		name, c10, cpp string
		stored         hlo.Elem
		lo, hi         float64
		infinityFits   bool
	}{
		{Float8E5M2, 23, "float8_e5m2", "Float8_e5m2", "c10::Float8_e5m2", hlo.F8E5M2, -57344, 57344, true},
		{Float8E4M3FN, 24, "float8_e4m3fn", "Float8_e4m3fn", "c10::Float8_e4m3fn", hlo.F8E4M3FN, -448, 448, false},
		{Float8E5M2FNUZ, 25, "float8_e5m2fnuz", "Float8_e5m2fnuz", "c10::Float8_e5m2fnuz", hlo.F8E5M2FNUZ, -57344, 57344, false},
		{Float8E4M3FNUZ, 26, "float8_e4m3fnuz", "Float8_e4m3fnuz", "c10::Float8_e4m3fnuz", hlo.F8E4M3FNUZ, -240, 240, false},
	}
	for _, c := range cases {
		d := c.d
		if int32(d) != c.code || d.String() != c.name || scalarTypeName(d) != c.c10 || cppName(d) != c.cpp ||
			scalarTypeCName(d) != c.cpp {
			t.Errorf("%d: names %q %q %q %q", int32(d), d.String(), scalarTypeName(d), cppName(d), scalarTypeCName(d))
		}
		if !d.Supported() || d.Size() != 1 || d.Elem() != hlo.F32 || d.StoredElem() != c.stored {
			t.Errorf("%s: supported %v, size %d, elem %s, stored %s", d, d.Supported(), d.Size(), d.Elem(), d.StoredElem())
		}
		if !d.IsFloat() || !d.IsFloat8() || d.IsComplex() || d.IsIntegral(true) {
			t.Errorf("%s: float %v, float8 %v, complex %v, integral %v", d, d.IsFloat(), d.IsFloat8(), d.IsComplex(), d.IsIntegral(true))
		}
		if lo, hi, ok := scalarLimits(d); !ok || lo != c.lo || hi != c.hi {
			t.Errorf("%s: limits %g, %g, %v", d, lo, hi, ok)
		}
		for v, fits := range map[float64]bool{c.hi: true, c.hi * 1.01: false, c.lo * 1.01: false, math.Inf(1): c.infinityFits} {
			err := checkScalarFits(floatArg(v), d)
			if (err == nil) != fits {
				t.Errorf("%s: checkScalarFits(%g) = %v, want fits %v", d, v, err, fits)
			}
		}
	}
	for _, d := range []DType{Float32, Float16, BFloat16, ComplexHalf} {
		if d.IsFloat8() {
			t.Errorf("%s counts as float8", d)
		}
	}
	// The float8 dtypes compute as float32, which still names float32 alone,
	// whatever order the dtype map is walked in.
	for i := 0; i < 50; i++ {
		if d := FromElem(hlo.F32); d != Float32 {
			t.Fatalf("FromElem(f32) = %s", d)
		}
	}
}

// TestFloat8Promotion checks PyTorch's promotion: a float8 dtype with
// itself, refused with any other dtype, and left alone by a Python number.
func TestFloat8Promotion(t *testing.T) {
	if d := PromoteTypes(Float8E4M3FN, Float8E4M3FN); d != Float8E4M3FN {
		t.Errorf("float8_e4m3fn with itself gives %s", d)
	}
	for _, other := range []DType{Float32, Float8E5M2, Int64, Bool} {
		func() {
			defer func() {
				r := recover()
				err, ok := r.(PromotionError)
				want := "Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and " + scalarTypeName(other)
				if !ok || err.Error() != want {
					t.Errorf("float8_e4m3fn with %s: %v, want %q", other, r, want)
				}
			}()
			PromoteTypes(Float8E4M3FN, other)
		}()
	}
	if d := ResultType(Operand{Float8E5M2FNUZ, KindDim}, Operand{Float64, KindWrapped}); d != Float8E5M2FNUZ {
		t.Errorf("float8_e5m2fnuz with a Python float gives %s", d)
	}
	if d := ResultType(Operand{Float8E5M2, KindDim}, Operand{Float32, KindZeroDim}); d != Float8E5M2 {
		t.Errorf("float8_e5m2 with a 0-dim float32 gives %s", d)
	}
}

// TestFloat8Ops checks which ops run on tpu for float8 tensors: every
// variant of one CPU implements, none of one it does not, and mul only of
// two tensors of several elements.
func TestFloat8Ops(t *testing.T) {
	for op, want := range map[string]bool{
		"aten::copy_": true, "aten::index_select": true, "aten::cat": true, "aten::fill_.Scalar": true,
		"aten::mul.Tensor": true, "aten::mm": true, "aten::where.self": true, "aten::eq.Tensor": true,
		"aten::add.Tensor": false, "aten::sort": false, "aten::gather": false, "aten::lt.Tensor": false,
		"aten::neg": false, "aten::no_such_op": false,
	} {
		if got := Float8Op(op); got != want {
			t.Errorf("Float8Op(%s) = %v, want %v", op, got, want)
		}
	}
	checkListedOpsHaveRules(t, "float8Ops", float8Ops)
	h := newHarness(t)
	f8 := func(sizes ...int64) Arg { return h.tensor(Float8E4M3FN, sizes...) }
	cases := []struct {
		op   string
		args []Arg
		want bool
	}{
		{"aten::mul.Tensor", []Arg{f8(3), f8(3)}, true},
		{"aten::mul.Tensor", []Arg{f8(3), f8(1)}, false},
		{"aten::mul.Tensor", []Arg{f8(3), f8()}, false},
		{"aten::mul.Tensor", []Arg{f8(1), f8(3)}, true},
		{"aten::mul.Scalar", []Arg{f8(3), floatArg(2)}, false},
		{"aten::index_put_", []Arg{f8(3), h.list(h.tensor(Int64, 2)), f8(2), boolArg(false)}, true},
		{"aten::index_put_", []Arg{f8(3), h.list(h.tensor(Int64, 2)), f8(2), boolArg(true)}, false},
		{"aten::exp", []Arg{f8(3)}, false},
		{"aten::exp", []Arg{h.tensor(Float32, 3)}, true},
	}
	for _, c := range cases {
		if got := AcceptsFloat8(c.op, c.args); got != c.want {
			t.Errorf("AcceptsFloat8(%s, %v) = %v, want %v", c.op, c.args, got, c.want)
		}
	}
}

// TestFloat8ResultDTypes checks which float8 dtype an op's float32 results
// are of: its dtype argument's, the destination's for copy, else its first
// float8 tensor's.
func TestFloat8ResultDTypes(t *testing.T) {
	h := newHarness(t)
	f32 := h.r.b.Param(hlo.T(hlo.F32, 3))
	c := &Ctx{Op: "aten::mul.Tensor", B: h.r.b, R: h.r, Args: []Arg{h.tensor(Float8E5M2, 3), h.tensor(Float8E5M2, 3)}}
	if d := c.ResultDType(f32); d != Float8E5M2 {
		t.Errorf("mul of float8_e5m2 gives %s", d)
	}
	if d := c.ResultDType(h.r.b.Param(hlo.T(hlo.Pred, 3))); d != Bool {
		t.Errorf("a bool result is %s", d)
	}
	c = &Ctx{Op: "aten::copy_", B: h.r.b, R: h.r, Args: []Arg{h.tensor(Float32, 3), h.tensor(Float8E4M3FNUZ, 3), boolArg(false)}}
	if d := c.ResultDType(f32); d != Float32 {
		t.Errorf("a copy into float32 gives %s", d)
	}
	c = &Ctx{Op: "aten::copy_", B: h.r.b, R: h.r, Args: []Arg{h.tensor(Float8E4M3FN, 3), h.tensor(Float8E5M2, 3), boolArg(false)}}
	if d := c.ResultDType(f32); d != Float8E4M3FN {
		t.Errorf("a copy into float8_e4m3fn gives %s", d)
	}
	c = &Ctx{Op: "aten::sum", B: h.r.b, R: h.r, Args: []Arg{h.tensor(Float8E4M3FN, 3), dtypeArg(Float32)}}
	if d, err := c.sumDType(Float8E4M3FN, 1); err != nil || d != Float32 {
		t.Fatalf("sum with dtype=float32: %s, %v", d, err)
	}
	if d := c.ResultDType(f32); d != Float32 {
		t.Errorf("sum with dtype=float32 gives %s", d)
	}
	c = &Ctx{Op: "aten::sum", B: h.r.b, R: h.r, Args: []Arg{h.tensor(Float8E4M3FN, 3), none}}
	if _, err := c.sumDType(Float8E4M3FN, 1); err != ErrRunOnCPU {
		t.Errorf("sum into float8: err = %v, want ErrRunOnCPU", err)
	}
	c = &Ctx{Op: "aten::exp", Args: []Arg{h.tensor(Float32, 3), dtypeArg(Float8E5M2)}}
	if _, err := c.DTypeArg(1, Undefined); err != ErrRunOnCPU {
		t.Errorf("exp with dtype=float8_e5m2: err = %v, want ErrRunOnCPU", err)
	}
}

// TestFloat8ConvertLowering checks that a conversion into float8_e5m2 makes
// NaNs PyTorch's and a conversion out of it too.
func TestFloat8ConvertLowering(t *testing.T) {
	b := hlo.NewBuilder()
	x := b.Param(hlo.T(hlo.F64, 2))
	y := convertTo(b, convertTo(b, x, Float64, Float8E5M2), Float8E5M2, Float16)
	text, _ := b.Module([]*hlo.Value{y})
	if !strings.Contains(text, "2143289347") || !strings.Contains(text, "tensor<2xf16>") {
		t.Errorf("the conversions lack the payload check:\n%s", text)
	}
}
